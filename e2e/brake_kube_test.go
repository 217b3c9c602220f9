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

// TestBrakeKubernetesConfigMaps: 30 ConfigMaps whose input comes back
// empty stay on the API server (the sink degraded, the deletes held);
// a run with max_deletes = "100%" deletes them. The runs share one
// owner_value: each starts from its own directory, and the default
// identity is made from the directory.
func TestBrakeKubernetesConfigMaps(t *testing.T) {
	cs, _ := clients(t)
	ns := kubeapitest.NewNamespace(t, cs)
	config := func(n int, extra string) string {
		var recs strings.Builder
		for i := range n {
			fmt.Fprintf(&recs, "    \"cm-%02d\" = { v = \"%d\" }\n", i, i)
		}
		return fmt.Sprintf(`
cluster "k" {
  kubeconfig = %s
}
source "static" "maps" {
  records = {
%s  }
}
sink "kubernetes" "maps" {
  input       = source.static.maps
  cluster     = cluster.k
  namespaces  = [%q]
  owner_value = "e2e.brake.maps" # one identity for the three runs, each from its own directory
  %s
  object = {
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata   = { name = record.key, namespace = %q }
    data       = { v = record.value.v }
  }
}
`, hclString(kubeconfig(t)), recs.String(), ns, extra, ns)
	}
	count := func() int {
		l, err := cs.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, cm := range l.Items {
			if strings.HasPrefix(cm.Name, "cm-") {
				n++
			}
		}
		return n
	}
	r := startKubeSink(t, config(30, ""))
	r.waitReady(t)
	eventually(t, 30*time.Second, "30 ConfigMaps", func() bool { return count() == 30 })
	r.stop()

	r = startKubeSink(t, config(0, ""))
	eventually(t, 30*time.Second, "deletes held", func() bool {
		return strings.Contains(fmt.Sprint(r.rt.Readiness()), "30 deletes held by the deletion brake")
	})
	if n := count(); n != 30 {
		t.Fatalf("%d ConfigMaps left while the brake holds their deletes, want 30", n)
	}
	if v := gaugeValue(r, "pipeline_sink_deletes_held", "sink.kubernetes.maps"); v != 30 {
		t.Fatalf("pipeline_sink_deletes_held = %v, want 30", v)
	}
	r.stop()

	r = startKubeSink(t, config(0, `max_deletes = "100%"`))
	eventually(t, 30*time.Second, "ConfigMaps deleted", func() bool { return count() == 0 })
	r.waitReady(t)
}
