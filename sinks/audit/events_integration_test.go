//go:build integration

package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/kubeapitest"
	"github.com/pipeline/pipeline/internal/redact"
)

var srv *kubeapitest.Server

func TestMain(m *testing.M) { os.Exit(kubeapitest.Main(m, &srv)) }

// TestEventsOnAPIServer runs the trail with an events block against a real
// API server, through the default credentials ($KUBECONFIG), and lists the
// Events it created.
func TestEventsOnAPIServer(t *testing.T) {
	admin, err := kubernetes.NewForConfig(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ns := kubeapitest.NewNamespace(t, admin)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := srv.WriteKubeconfig(kc, "test"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kc)
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("POD_NAME", "")

	func() {
		defer goleak.VerifyNone(t, leakOptions()...)
		s := build(t, t.TempDir(), fmt.Sprintf("events {\n  namespace = %q\n  ops = [\"delete\", \"config_loaded\"]\n}", ns))
		s.cfg.secrets = redact.New([]string{"hunter2"})
		tg, _, _ := open(t, s)
		if err := tg.RecordDecision(node.Decision{Kind: node.DecisionConfigLoaded, ConfigGeneration: 5, Detail: "loaded"}); err != nil {
			t.Fatal(err)
		}
		tg.Update(context.Background(), []node.Entry{rec(1), rec(2)})
		tg.Delete(context.Background(), []node.Entry{rec(1), {Key: "hunter2"}})
		deadline := time.Now().Add(30 * time.Second)
		for testutil.ToFloat64(tg.met.events) < 3 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		var got []string
		for time.Now().Before(deadline) {
			l, err := admin.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got = got[:0]
			for _, e := range l.Items {
				got = append(got, fmt.Sprintf("%s %s %s/%s gen=%s %s", e.Type, e.Reason, e.InvolvedObject.Kind,
					e.InvolvedObject.Name, e.Annotations[GenerationAnnotation], e.Message))
			}
			if len(got) >= 3 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err := tg.Close(); err != nil {
			t.Fatal(err)
		}
		sort.Strings(got)
		want := []string{
			"Normal ConfigLoaded ConfigMap/pipeline-audit gen=5 graph: config_loaded: loaded",
			`Normal Deleted ConfigMap/pipeline-audit gen=5 node sink.audit.test: delete key "(sensitive)": no longer desired by the input`,
			`Normal Deleted ConfigMap/pipeline-audit gen=5 node sink.audit.test: delete key "10.0.0.1/32": no longer desired by the input`,
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("Events (-want +got):\n%s", d)
		}
		if n := testutil.ToFloat64(tg.met.eventFailures); n != 0 {
			t.Errorf("event_failures_total = %v, want 0", n)
		}
	}()
}
