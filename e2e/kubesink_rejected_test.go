//go:build integration

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pipeline/pipeline/internal/kubeapitest"
)

// counterTotal sums every series of counter name that a node registered.
func counterTotal(r *running, name string) float64 {
	mfs, _ := r.met.NodeGatherer().Gather()
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

// TestKubeSinkRejectedNotRetried: an object the API server answers with
// 422 (an invalid name) is counted rejected once and not retried on the
// loop's backoff: /readyz says it is rejected, the other object is
// written, and the rejection count stays 1 while a backoff would have
// retried it several times.
func TestKubeSinkRejectedNotRetried(t *testing.T) {
	cs, _ := clients(t)
	ns := kubeapitest.NewNamespace(t, cs)
	r := startKubeSink(t, fmt.Sprintf(`
cluster "k" {
  kubeconfig = %s
}
source "static" "maps" {
  records = {
    "good"     = { v = "1" }
    "Bad_Name" = { v = "2" }
  }
}
sink "kubernetes" "maps" {
  input      = source.static.maps
  cluster    = cluster.k
  namespaces = [%q]
  object = {
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata   = { name = record.key, namespace = %q }
    data       = { v = record.value.v }
  }
}
`, hclString(kubeconfig(t)), ns, ns))
	eventually(t, 30*time.Second, "the rejection", func() bool {
		return counterTotal(r, "pipeline_sink_kubernetes_rejected_total") >= 1
	})
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "good", metav1.GetOptions{}); err != nil {
		t.Fatalf("the valid object was not written: %v", err)
	}
	// The backoff's first steps are 100 ms, 200 ms, 400 ms, 800 ms and
	// 1.6 s: a retried rejection would be counted 5 times by now.
	time.Sleep(3 * time.Second)
	if n := counterTotal(r, "pipeline_sink_kubernetes_rejected_total"); n != 1 {
		t.Errorf("pipeline_sink_kubernetes_rejected_total = %v after 3 s, want 1: the rejected object was retried", n)
	}
	if ready := fmt.Sprint(r.rt.Readiness()); !strings.Contains(ready, "1 entries rejected by the target") || !strings.Contains(ready, "Bad_Name") {
		t.Errorf("readiness %s; want the rejected entry named", ready)
	}
	e := r.rt.Explain(context.Background(), ns+"/Bad_Name")
	if len(e.Entries) != 1 {
		t.Fatalf("explain: %d entries", len(e.Entries))
	}
	if x := e.Entries[0]; x.Rejected == "" || !strings.Contains(x.LastError, "rejected by the API server") || !x.RetryAt.IsZero() {
		t.Errorf("explain: rejected %q, error %q, retry at %v", x.Rejected, x.LastError, x.RetryAt)
	}
}
