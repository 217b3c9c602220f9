package audit

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/zclconf/go-cty/cty"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/internal/redact"
)

const eventsBody = `events {
  namespace = "pipeline"
  ops       = ["delete", "sink_degraded"]
}`

// waitEvents polls the fake clientset until n Events exist.
func waitEvents(t *testing.T, cs *fake.Clientset, n int) []corev1.Event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, err := cs.CoreV1().Events("pipeline").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Items) >= n || time.Now().After(deadline) {
			return l.Items
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestEventsSelectAndRedact checks that only the selected ops become Events,
// with their reason, node, key, generation, and no sensitive value.
func TestEventsSelectAndRedact(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	s := build(t, t.TempDir(), eventsBody)
	s.cfg.secrets = redact.New([]string{"hunter2"})
	cs := fake.NewClientset()
	s.Clientset = cs
	tg, _, _ := open(t, s)
	if err := tg.RecordDecision(node.Decision{Kind: node.DecisionConfigLoaded, ConfigGeneration: 3}); err != nil {
		t.Fatal(err)
	}
	secret := node.Entry{Key: "token-hunter2", Value: cty.ObjectVal(map[string]cty.Value{"password": cty.StringVal("hunter2")})}
	tg.Update(context.Background(), []node.Entry{rec(1), secret})
	tg.Delete(context.Background(), []node.Entry{secret})
	if err := tg.RecordDecision(node.Decision{Kind: node.DecisionSinkDegraded, Node: "sink.ebpf.x", Detail: "map full: hunter2"}); err != nil {
		t.Fatal(err)
	}
	evs := waitEvents(t, cs, 2)
	if err := tg.Close(); err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 {
		t.Fatalf("got %d Events, want 2 (delete, sink_degraded): %+v", len(evs), evs)
	}
	got := map[string]string{}
	for _, e := range evs {
		got[e.Reason] = e.Type + " " + e.Annotations[GenerationAnnotation] + " " + e.Message
		if strings.Contains(e.Message, "hunter2") || strings.Contains(fmt.Sprint(e), "hunter2") {
			t.Errorf("Event carries a sensitive value: %+v", e)
		}
		if e.InvolvedObject.Namespace != "pipeline" || e.Namespace != "pipeline" {
			t.Errorf("Event %s in namespace %q about %+v, want pipeline", e.Name, e.Namespace, e.InvolvedObject)
		}
	}
	want := map[string]string{
		"Deleted":      `Normal 3 node sink.audit.test: delete key "(sensitive)": no longer desired by the input`,
		"SinkDegraded": `Warning 3 node sink.ebpf.x: sink_degraded: (sensitive)`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Events (-want +got):\n%s", d)
	}
	if n := testutil.ToFloat64(tg.met.events); n != 2 {
		t.Errorf("events_total = %v, want 2", n)
	}
}

// TestEventsNeverBlock holds every API call of a fake API server: the trail
// still takes every line, Close returns and no goroutine is left behind.
// Failures are counted.
func TestEventsNeverBlock(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	s := build(t, t.TempDir(), eventsBody)
	cs := fake.NewClientset()
	release := make(chan struct{})
	var calls int
	cs.PrependReactor("*", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		calls++
		if calls == 1 {
			<-release // the first call hangs until the test ends
		}
		return true, nil, errors.New("api server down")
	})
	s.Clientset = cs
	tg, _, _ := open(t, s)
	for i := range 3000 {
		tg.Delete(context.Background(), []node.Entry{rec(i)})
	}
	close(release)
	if err := tg.Close(); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, s.cfg.path)
	if len(lines) != 3001 { // open + 3000 deletes
		t.Fatalf("trail has %d lines, want 3001", len(lines))
	}
}

// TestEventsFailuresCounted checks a failing API server is counted.
func TestEventsFailuresCounted(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	s := build(t, t.TempDir(), eventsBody)
	cs := fake.NewClientset()
	cs.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("api server down")
	})
	s.Clientset = cs
	tg, _, _ := open(t, s)
	tg.Delete(context.Background(), []node.Entry{rec(1)})
	deadline := time.Now().Add(10 * time.Second)
	for testutil.ToFloat64(tg.met.eventFailures) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := tg.Close(); err != nil {
		t.Fatal(err)
	}
	if n := testutil.ToFloat64(tg.met.eventFailures); n == 0 {
		t.Error("event_failures_total = 0 after a failed create")
	}
}

func TestEventsConfig(t *testing.T) {
	_, diags := nodetest.Build(t, Spec(), "input = source.static.x\npath = \"t\"\nevents {\n  ops = [\"delete\", \"sink_degrade\"]\n}\n", up)
	if !diags.HasErrors() || !strings.Contains(diags.Error(), `"sink_degrade"`) || !strings.Contains(diags.Error(), "sink_degraded") ||
		!strings.Contains(diags.Error(), ":5,") {
		t.Errorf("unknown op: diagnostics %v, want an error at line 4 naming the valid ops", diags)
	}
	_, diags = nodetest.Build(t, Spec(), "input = source.static.x\npath = \"t\"\nevents {\n  cluster = cluster.nope\n  ops = [\"delete\"]\n}\n", up)
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "nope") {
		t.Errorf("undeclared cluster: diagnostics %v", diags)
	}
	s := nodetest.MustBuild(t, Spec(), "input = source.static.x\npath = \"t\"\nevents {\n  ops = [\"delete\"]\n}\n", up).Sink.(*Sink)
	want := []node.KubeRule{{Resource: "events", OwnNamespace: true, Verbs: []string{"create", "patch"}}}
	if d := cmp.Diff(want, s.KubeRules()); d != "" {
		t.Errorf("KubeRules (-want +got):\n%s", d)
	}
	if r := nodetest.MustBuild(t, Spec(), "input = source.static.x\npath = \"t\"\n", up).Sink.(*Sink).KubeRules(); r != nil {
		t.Errorf("KubeRules without events = %v, want none", r)
	}
}

// leakOptions ignores the goroutines that exist when a test starts (with the
// integration tag, the API server's process watchers and the admin clients'
// connections of earlier tests).
func leakOptions() []goleak.Option {
	return []goleak.Option{goleak.IgnoreCurrent(),
		goleak.IgnoreAnyFunction("github.com/pipeline/pipeline/internal/kubeapitest.(*Server).spawn.func1")}
}

// TestEventFailureLoggedOnce: a failing API server is counted per call and
// logged once per distinct error.
func TestEventFailureLoggedOnce(t *testing.T) {
	var buf strings.Builder
	failures := prometheus.NewCounter(prometheus.CounterOpts{Name: "f"})
	s := &eventSink{ctx: context.Background(), log: slog.New(slog.NewTextHandler(&buf, nil)), failures: failures, seen: map[string]bool{}}
	for range 5 {
		_ = s.failed("create", errors.New("connection refused"))
	}
	_ = s.failed("patch", errors.New("forbidden"))
	if n := testutil.ToFloat64(failures); n != 6 {
		t.Errorf("failures = %v, want 6", n)
	}
	if n := strings.Count(buf.String(), "\n"); n != 2 {
		t.Errorf("logged %d lines, want 2 (one per distinct error):\n%s", n, buf.String())
	}
}

// TestEventsAboutOwnPod: with POD_NAME and POD_NAMESPACE set and no
// namespace, Events go to the pod's namespace and are about the pod.
func TestEventsAboutOwnPod(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	t.Setenv("POD_NAME", "pl-0")
	t.Setenv("POD_NAMESPACE", "pipeline")
	t.Setenv("POD_UID", "u-1")
	s := build(t, t.TempDir(), "events {\n  ops = [\"open\"]\n}")
	cs := fake.NewClientset()
	s.Clientset = cs
	tg, _, _ := open(t, s)
	evs := waitEvents(t, cs, 1)
	if err := tg.Close(); err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 {
		t.Fatalf("got %d Events, want the open one", len(evs))
	}
	want := corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "pipeline", Name: "pl-0", UID: "u-1"}
	if d := cmp.Diff(want, evs[0].InvolvedObject); d != "" || evs[0].Reason != "TrailOpened" {
		t.Errorf("Event %s about (-want +got):\n%s", evs[0].Reason, d)
	}
}

// TestEventReasonForEveryDecision: every decision kind engine/node
// declares can become an Event with a reason of its own, so a new kind
// cannot be left out of the events block.
func TestEventReasonForEveryDecision(t *testing.T) {
	kinds := decisionKinds(t, "../../engine/node")
	if len(kinds) < 10 {
		t.Fatalf("found %d decision kinds in engine/node, want at least 10: %v", len(kinds), kinds)
	}
	reasons := map[string]string{}
	for _, k := range kinds {
		r, ok := eventReasons[k]
		if !ok {
			t.Errorf("decision kind %q has no Event reason", k)
			continue
		}
		if prev, dup := reasons[r.reason]; dup {
			t.Errorf("decision kinds %q and %q share the Event reason %s", prev, k, r.reason)
		}
		reasons[r.reason] = k
	}
}

// decisionKinds lists the values of the DecisionKind constants declared in
// the Go files of dir.
func decisionKinds(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "DecisionKind" {
					continue
				}
				for _, v := range vs.Values {
					if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						s, _ := strconv.Unquote(lit.Value)
						out = append(out, s)
					}
				}
			}
		}
	}
	return out
}

// TestEventsOfSinkDecisions: what a kubernetes sink applied and deleted and
// what a template sink rendered become Events with their own reasons.
func TestEventsOfSinkDecisions(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	s := build(t, t.TempDir(), "events {\n  namespace = \"pipeline\"\n  ops = [\"object_applied\", \"object_deleted\", \"file_rendered\"]\n}")
	cs := fake.NewClientset()
	s.Clientset = cs
	tg, _, _ := open(t, s)
	for _, d := range []node.Decision{
		{Kind: node.DecisionObjectApplied, Node: "sink.kubernetes.netpol", Detail: "applied NetworkPolicy shop/default-deny",
			Attrs: map[string]string{"key": "shop/default-deny", "resource_version": "41"}},
		{Kind: node.DecisionObjectDeleted, Node: "sink.kubernetes.netpol", Detail: "deleted NetworkPolicy old/default-deny",
			Attrs: map[string]string{"key": "old/default-deny", "resource_version": "42"}},
		{Kind: node.DecisionFileRendered, Node: "sink.template.haproxy", Detail: "rendered /etc/haproxy/haproxy.cfg"},
		{Kind: node.DecisionSinkRecovered, Node: "sink.kubernetes.netpol"}, // not selected
	} {
		if err := tg.RecordDecision(d); err != nil {
			t.Fatal(err)
		}
	}
	evs := waitEvents(t, cs, 3)
	if err := tg.Close(); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range evs {
		got[e.Reason] = e.Type + " " + e.Message
	}
	want := map[string]string{
		"ObjectApplied": "Normal node sink.kubernetes.netpol: object_applied: applied NetworkPolicy shop/default-deny",
		"ObjectDeleted": "Normal node sink.kubernetes.netpol: object_deleted: deleted NetworkPolicy old/default-deny",
		"FileRendered":  "Normal node sink.template.haproxy: file_rendered: rendered /etc/haproxy/haproxy.cfg",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Events (-want +got):\n%s", d)
	}
}

// TestEventsOfBrakeDecisions: the deletion brake's decisions may become
// Events, a held delete as a Warning.
func TestEventsOfBrakeDecisions(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	s := build(t, t.TempDir(), "events {\n  namespace = \"pipeline\"\n  ops = [\"deletes_held\", \"deletes_released\"]\n}")
	cs := fake.NewClientset()
	s.Clientset = cs
	tg, _, _ := open(t, s)
	for _, d := range []node.Decision{
		{Kind: node.DecisionDeletesBraked, Node: "sink.ebpf_map.allowed", Detail: "35 deletes held"},
		{Kind: node.DecisionDeletesReleased, Node: "sink.ebpf_map.allowed", Detail: "35 deletes released"},
	} {
		if err := tg.RecordDecision(d); err != nil {
			t.Fatal(err)
		}
	}
	evs := waitEvents(t, cs, 2)
	if err := tg.Close(); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range evs {
		got[e.Reason] = e.Type + " " + e.Message
	}
	want := map[string]string{
		"DeletesHeld":     "Warning node sink.ebpf_map.allowed: deletes_held: 35 deletes held",
		"DeletesReleased": "Normal node sink.ebpf_map.allowed: deletes_released: 35 deletes released",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Events (-want +got):\n%s", d)
	}
}
