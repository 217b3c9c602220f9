package prometheus

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/engine/reconcile"
)

// serve runs a target of body in ModeRun holding recs, on a registry
// served over HTTP with the node label as the engine serves it, beside a
// metric of this program's own carrying the same node label and a series
// of another sink of the same family. It returns the /metrics URL.
func serve(t *testing.T, body string, recs ...node.Record) string {
	t.Helper()
	tg, reg, _ := open(t, body)
	tg.Update(context.Background(), prepare(t, tg, recs...))
	own := promclient.NewCounterVec(promclient.CounterOpts{Name: "pipeline_sink_writes_total", Help: "h"}, []string{"node"})
	own.WithLabelValues("sink.prometheus.test").Add(3)
	reg.MustRegister(own)
	other := nodetest.MustBuild(t, Spec(), readyBody, nil).Sink.(*Sink)
	other.address = "sink.prometheus.other"
	env, _ := nodetest.Env(t, nil)
	env.Metrics = promclient.WrapRegistererWith(promclient.Labels{"node": other.address}, reg)
	otg, err := other.Open(context.Background(), env, node.ModeRun)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = otg.Close() })
	otg.Update(context.Background(), prepare(t, otg, widget("z", "other", "True")))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

// planDiff opens body in ModePlan against the instance at url (none when
// empty), prepares recs and diffs them with what Actual reads, as plan
// does: it returns each change as "ACTION KEY: OLD => NEW", and the note.
func planDiff(t *testing.T, body, url string, recs ...node.Record) ([]string, string) {
	t.Helper()
	s := nodetest.MustBuild(t, Spec(), body, nil).Sink.(*Sink)
	ctx := context.Background()
	if url != "" {
		ctx = node.WithRunning(ctx, node.Running{MetricsURL: url})
	}
	env, _ := nodetest.Env(t, nil)
	tg, err := s.Open(ctx, env, node.ModePlan)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	desired := map[node.Key]node.Entry{}
	for _, e := range prepare(t, tg, recs...) {
		desired[e.Key] = e
	}
	es, err := tg.Actual(ctx)
	if err != nil {
		t.Fatal(err)
	}
	actual := map[node.Key]node.Entry{}
	for _, e := range es {
		if _, dup := actual[e.Key]; dup {
			t.Fatalf("Actual lists %s twice", e.Key)
		}
		actual[e.Key] = e
	}
	changes := reconcile.Diff(s.address, desired, actual, true)
	reconcile.Sort(changes)
	var out []string
	show := tg.(node.Describer).Show
	for _, c := range changes {
		old, new := "", ""
		if c.Action != reconcile.Create {
			old = show(c.Old)
		}
		if c.Action != reconcile.Delete {
			new = show(c.New)
		}
		out = append(out, string(rune(c.Action))+" "+c.Key+": "+old+" => "+new)
	}
	return out, tg.(node.Describer).Describe().Note
}

func TestPlanReadsTheRunningInstance(t *testing.T) {
	// A Ready condition "maybe" gives a value that is not a number: the
	// record is skipped, held without a series.
	body := strings.Replace(readyBody, `c.status if c.type == "Ready"], "True")`,
		`c.status if c.type == "Ready"], "True") ? 1 : (contains([for c in try(record.value.status.conditions, []) : c.status], "maybe") ? "x" : 0)`, 1)
	url := serve(t, body,
		widget("a", "same", "True"), widget("a", "flip", "True"), widget("a", "gone", "True"),
		widget("a", "tobad", "True"), widget("a", "stillbad", "maybe"))
	got, note := planDiff(t, body, url,
		widget("a", "same", "True"), widget("a", "flip", "False"), widget("a", "new", "True"),
		widget("a", "tobad", "maybe"), widget("a", "stillbad", "maybe"), widget("a", "newbad", "maybe"))
	want := []string{
		`~ a/flip: kube_customresource_ready{condition="Ready",name="flip",namespace="a"} 1 => kube_customresource_ready{condition="Ready",name="flip",namespace="a"} 0`,
		`+ a/new:  => kube_customresource_ready{condition="Ready",name="new",namespace="a"} 1`,
		`~ a/tobad: kube_customresource_ready{condition="Ready",name="tobad",namespace="a"} 1 => skipped (value is "x", not a number): kube_customresource_ready{condition="Ready",name="tobad",namespace="a"} NaN`,
		`- kube_customresource_ready{condition="Ready",name="gone",namespace="a"}: kube_customresource_ready{condition="Ready",name="gone",namespace="a"} 1 => `,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("plan against the instance (-want +got):\n%s", diff)
	}
	if note != "" {
		t.Errorf("note %q with an instance", note)
	}
}

func TestPlanWithoutInstanceSaysSo(t *testing.T) {
	got, note := planDiff(t, readyBody, "", widget("a", "x", "True"))
	if len(got) != 1 || !strings.HasPrefix(got[0], "+ a/x") {
		t.Fatalf("changes %q, want one add", got)
	}
	if note != noInstance {
		t.Fatalf("note %q, want %q", note, noInstance)
	}
}

func TestPlanRenamedFamilyRemovesTheOldSeries(t *testing.T) {
	url := serve(t, readyBody, widget("a", "w", "True"))
	body := strings.Replace(readyBody, `"kube_customresource_ready"`, `"kube_customresource_is_ready"`, 1)
	got, _ := planDiff(t, body, url, widget("a", "w", "True"))
	want := []string{
		`+ a/w:  => kube_customresource_is_ready{condition="Ready",name="w",namespace="a"} 1`,
		`- kube_customresource_ready{condition="Ready",name="w",namespace="a"}: kube_customresource_ready{condition="Ready",name="w",namespace="a"} 1 => `,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestPlanInstanceUnreachableFails(t *testing.T) {
	srv := httptest.NewServer(nil)
	url := srv.URL + "/metrics"
	srv.Close()
	s := nodetest.MustBuild(t, Spec(), readyBody, nil).Sink.(*Sink)
	ctx := node.WithRunning(context.Background(), node.Running{MetricsURL: url})
	env, _ := nodetest.Env(t, nil)
	tg, err := s.Open(ctx, env, node.ModePlan)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if _, err := tg.Actual(ctx); err == nil || !strings.Contains(err.Error(), "read the served series") {
		t.Fatalf("Actual of an unreachable instance: %v", err)
	}
}
