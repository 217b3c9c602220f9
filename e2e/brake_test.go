//go:build integration

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/plan"
	"github.com/pipeline/pipeline/schema"
)

// brakeConfig is a pinned allow-list of n addresses, with more sink
// attributes (extra).
func brakeConfig(pin string, n int, extra string) string {
	var recs strings.Builder
	for i := range n {
		fmt.Fprintf(&recs, "    \"10.0.1.%d\" = { id = %d }\n", i+1, i+1)
	}
	return fmt.Sprintf(`
source "static" "allowed" {
  records = {
%s  }
}
sink "ebpf_map" "allowed" {
  input  = source.static.allowed
  pin    = %q
  resync = "1s"
  %s
  key {
    type = "ipv4"
  }
  value {
    type = "u32"
    from = record.value.id
  }
}
`, recs.String(), pin, extra)
}

// TestBrakeRealMap: an allow-list of 35 entries whose input comes back
// empty keeps every entry in the kernel's map: plan marks the 35 deletes
// held, run holds them (the sink degraded, pipeline_sink_deletes_held 35)
// through resyncs; a run with max_deletes = "100%" deletes them.
func TestBrakeRealMap(t *testing.T) {
	requireRoot(t)
	pin := pinDir(t) + "/allowed"
	r := start(t, brakeConfig(pin, 35, ""))
	r.waitReady(t)
	r.stop()
	m, err := ebpf.LoadPinnedMap(pin, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	count := func() int {
		n := 0
		var k, v []byte
		for it := m.Iterate(); it.Next(&k, &v); {
			n++
		}
		return n
	}
	if n := count(); n != 35 {
		t.Fatalf("the map holds %d entries, want 35", n)
	}

	emptied := brakeConfig(pin, 0, "")
	cfg, diags := schema.NewLoader().ParseSource(t.TempDir()+"/e2e.hcl", []byte(emptied), schema.Options{Environ: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	g, diags := graph.Compile(cfg, registry())
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	p, err := plan.Plan(context.Background(), g, plan.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sp := p.Sinks[0]; sp.DeletesBraked != 35 || !strings.Contains(sp.Brake, "max_deletes = 50%") {
		t.Fatalf("plan: %d deletes held (%q), want 35", sp.DeletesBraked, sp.Brake)
	}

	r = start(t, emptied)
	eventually(t, 30*time.Second, "deletes held", func() bool {
		return strings.Contains(fmt.Sprint(r.rt.Readiness()), "35 deletes held by the deletion brake")
	})
	time.Sleep(2500 * time.Millisecond) // resyncs read the map and hold again
	if n := count(); n != 35 {
		t.Fatalf("the brake let %d entries go", 35-n)
	}
	if _, dels := r.writes("sink.ebpf_map.allowed"); dels != 0 {
		t.Fatalf("%v deletes written while braked", dels)
	}
	if v := gaugeValue(r, "pipeline_sink_deletes_held", "sink.ebpf_map.allowed"); v != 35 {
		t.Fatalf("pipeline_sink_deletes_held = %v, want 35", v)
	}
	r.stop()

	r = start(t, brakeConfig(pin, 0, `max_deletes = "100%"`))
	eventually(t, 30*time.Second, "deletes applied", func() bool { return count() == 0 })
	r.waitReady(t)
}

// gaugeValue is the value of gauge name for node, 0 when absent.
func gaugeValue(r *running, name, node string) float64 {
	mfs, _ := r.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "node" && l.GetValue() == node {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return 0
}
