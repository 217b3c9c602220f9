//go:build integration

package kubernetes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	clientset "k8s.io/client-go/kubernetes"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/internal/kubeapitest"
)

var srv *kubeapitest.Server

func TestMain(m *testing.M) { os.Exit(kubeapitest.Main(m, &srv)) }

// useServer points the default credentials (no cluster block) at the test
// server and returns a fresh namespace.
func useServer(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := srv.WriteKubeconfig(path, "test"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", path)
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	cs, err := clientset.NewForConfig(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return kubeapitest.NewNamespace(t, cs)
}

func openSink(t *testing.T, body string, mode node.Mode) *Target {
	t.Helper()
	s := nodetest.MustBuild(t, Spec(), body, nil).Sink.(*Sink)
	env, _ := nodetest.Env(t, prometheus.NewRegistry())
	tg, err := s.Open(context.Background(), env, mode)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tg.Close() })
	return tg.(*Target)
}

func configMapSink(ns string) string {
	return fmt.Sprintf(`
namespaces = [%q]
object = {
  apiVersion = "v1"
  kind       = "ConfigMap"
  metadata   = { name = record.key, namespace = %q }
  data       = { value = record.value }
}
`, ns, ns)
}

func strRecords(kv ...string) []node.Record {
	var out []node.Record
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, node.Record{Key: kv[i], Value: cty.StringVal(kv[i+1])})
	}
	return out
}

func TestTargetSuite(t *testing.T) {
	recs := strRecords("a", "1", "b", "2", "c", "3")
	nodetest.RunTargetSuite(t, func(t *testing.T) node.Target {
		return openSink(t, configMapSink(useServer(t)), node.ModeRun)
	}, recs)
}

func prepared(t *testing.T, tg *Target, recs []node.Record) []node.Entry {
	t.Helper()
	var out []node.Entry
	for _, r := range recs {
		e, err := tg.Prepare(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// TestDriftAndDown: a hand edit shows as a different entry; while the API
// server is down Actual fails (the loop then prunes nothing), and after
// it returns the objects read as they were.
func TestDriftAndDown(t *testing.T) {
	ns := useServer(t)
	tg := openSink(t, configMapSink(ns), node.ModeRun)
	es := prepared(t, tg, strRecords("a", "1", "b", "2"))
	tg.Update(context.Background(), es)
	for _, e := range es {
		if e.Err != nil {
			t.Fatal(e.Err)
		}
	}
	// A read before the edit: the next one must not reuse its entry of a.
	if _, err := tg.Actual(context.Background()); err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(srv.RESTConfig())
	cms := dyn.Resource(kschema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns)
	o, err := cms.Get(context.Background(), "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o.Object["data"] = map[string]any{"value": "edited", "extra": "x"}
	if _, err := cms.Update(context.Background(), o, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	actual, err := tg.Actual(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	same := map[string]bool{}
	for _, a := range actual {
		for _, e := range es {
			if a.Key == e.Key {
				same[a.Key] = a.Same(e)
			}
		}
	}
	if same[ns+"/a"] || !same[ns+"/b"] {
		t.Errorf("same as wanted: %v; want a edited, b unchanged", same)
	}

	if err := srv.StopAPIServer(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, errDown := tg.Actual(context.Background())
	if err := srv.StartAPIServer(context.Background()); err != nil {
		t.Fatal(err)
	}
	if errDown == nil {
		t.Error("Actual succeeded with the API server down: the loop could prune on an empty read")
	}
	actual, err = tg.Actual(context.Background())
	if err != nil || len(actual) != 2 {
		t.Errorf("after the API server returned: %d entries, %v", len(actual), err)
	}
}

// TestDryRun: plan's lines come from the API server (the defaults it
// fills in are there), writes nothing, and an unknown field fails naming it.
func TestDryRun(t *testing.T) {
	ns := useServer(t)
	tg := openSink(t, fmt.Sprintf(`
object = {
  apiVersion = "v1"
  kind       = "Service"
  metadata   = { name = record.key, namespace = %q }
  spec       = { ports = [{ port = 80 }], selector = { app = record.value } }
}
`, ns), node.ModePlan)
	e := prepared(t, tg, strRecords("web", "web"))[0]
	d, err := tg.DryRun(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(d.Lines, "\n")
	for _, want := range []string{`+ spec.selector.app = "web"`, `+ spec.type = "ClusterIP"`, `+ spec.ports = [{"port":80,"protocol":"TCP","targetPort":80}]`} {
		if !strings.Contains(text, want) {
			t.Errorf("dry run lacks %q:\n%s", want, text)
		}
	}
	cs := clientset.NewForConfigOrDie(srv.RESTConfig())
	if _, err := cs.CoreV1().Services(ns).Get(context.Background(), "web", metav1.GetOptions{}); err == nil {
		t.Error("the dry run created the Service")
	}
	bad := openSink(t, fmt.Sprintf(`
object = {
  apiVersion = "v1"
  kind       = "ConfigMap"
  metadata   = { name = record.key, namespace = %q }
  dta        = { x = "y" }
}
`, ns), node.ModePlan)
	_, err = bad.DryRun(context.Background(), prepared(t, bad, strRecords("x", "y"))[0])
	if err == nil || !strings.Contains(err.Error(), "dta") {
		t.Errorf("unknown field: %v", err)
	}
}
