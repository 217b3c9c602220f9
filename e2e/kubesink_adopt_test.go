//go:build integration

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/plan"
	"github.com/pipeline/pipeline/engine/reconcile"
	"github.com/pipeline/pipeline/internal/kubeapitest"
	"github.com/pipeline/pipeline/schema"
)

// planKube plans src with the kubernetes sink's registry.
func planKube(t *testing.T, src string) *plan.PlanResult {
	t.Helper()
	cfg, diags := schema.NewLoader().ParseSource(t.TempDir()+"/e2e.hcl", []byte(src), schema.Options{Environ: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	g, diags := graph.Compile(cfg, kubeRegistry())
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	p, err := plan.Plan(context.Background(), g, plan.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestKubeSinkPlanAdoption: a ConfigMap made by hand with the name a
// record wants is shown by plan as refused (not as an add that would
// fail), and run refuses it; with adopt = true plan shows it adopted, and
// run adopts it.
func TestKubeSinkPlanAdoption(t *testing.T) {
	cs, _ := clients(t)
	ns := kubeapitest.NewNamespace(t, cs)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hand", Namespace: ns}, Data: map[string]string{"v": "mine"}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	config := func(extra string) string {
		return fmt.Sprintf(`
cluster "k" {
  kubeconfig = %s
}
source "static" "maps" {
  records = {
    "hand" = { v = "pipeline's" }
    "new"  = { v = "1" }
  }
}
sink "kubernetes" "maps" {
  input       = source.static.maps
  cluster     = cluster.k
  namespaces  = [%q]
  owner_value = "e2e.adopt.maps" # one identity for plan and run, each from its own directory
  %s
  object = {
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata   = { name = record.key, namespace = %q }
    data       = { v = record.value.v }
  }
}
`, hclString(kubeconfig(t)), ns, extra, ns)
	}
	change := func(p *plan.PlanResult, key string) plan.PlannedChange {
		t.Helper()
		for _, c := range p.Sinks[0].Changes {
			if c.Key == ns+"/"+key {
				return c
			}
		}
		t.Fatalf("plan has no change of %s", key)
		return plan.PlannedChange{}
	}
	p := planKube(t, config(""))
	if c := change(p, "hand"); !strings.Contains(c.Refused, "exists and is not owned by pipeline.io/owner=e2e.adopt.maps; set adopt = true") ||
		c.DryRunError != "" || c.Adopts != "" {
		t.Errorf("plan of the hand-made object: refused %q, dry run error %q, adopts %q", c.Refused, c.DryRunError, c.Adopts)
	}
	if c := change(p, "new"); c.Refused != "" || c.Action != reconcile.Create || len(c.Detail) == 0 {
		t.Errorf("plan of the new object: %+v", c)
	}

	r := startKubeSink(t, config(""))
	eventually(t, 30*time.Second, "the new object", func() bool {
		_, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "new", metav1.GetOptions{})
		return err == nil
	})
	eventually(t, 30*time.Second, "the refusal", func() bool {
		e := r.rt.Explain(context.Background(), ns+"/hand")
		return len(e.Entries) == 1 && strings.Contains(e.Entries[0].LastError, "exists and is not owned by")
	})
	if got, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "hand", metav1.GetOptions{}); err != nil || got.Data["v"] != "mine" {
		t.Fatalf("run changed the hand-made object: %v, %v", got.Data, err)
	}
	r.stop()

	p = planKube(t, config("adopt = true"))
	if c := change(p, "hand"); c.Refused != "" || !strings.Contains(c.Adopts, "exists and is not owned by") || c.DryRunError != "" {
		t.Errorf("plan with adopt: refused %q, adopts %q, dry run error %q", c.Refused, c.Adopts, c.DryRunError)
	}
	r = startKubeSink(t, config("adopt = true"))
	eventually(t, 30*time.Second, "the adoption", func() bool {
		got, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "hand", metav1.GetOptions{})
		return err == nil && got.Data["v"] == "pipeline's" && got.Labels["pipeline.io/owner"] == "e2e.adopt.maps"
	})
	r.waitReady(t)
}
