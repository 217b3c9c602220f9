package extract

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pipeline/pipeline/engine/node"
)

// TestOriginsPassedOn: every record key yielded carries the provenance of
// the object yielding it (plan names the object from it), from a reset
// and from deltas alike.
func TestOriginsPassedOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, objects, podIPs)
		withOrigin := func(rec node.Record) node.Record {
			rec.Origin = &node.Origin{Source: objects.Address, Object: rec.Key}
			return rec
		}
		r.reset(withOrigin(pod(t, "a", "Running", "10.0.0.1", "fd00::1")), withOrigin(pod(t, "p", "Pending", "10.0.0.9")))
		b := withOrigin(pod(t, "b", "Running", "10.0.0.2"))
		r.deltas(node.Delta{Key: b.Key, Value: b.Value, Time: time.Now(), Origin: b.Origin})
		got := map[node.Key]node.Key{}
		for _, batch := range r.out.Batches() {
			for _, d := range batch {
				if d.Origin != nil {
					got[d.Key] = d.Origin.Object
				}
			}
		}
		want := map[node.Key]node.Key{"10.0.0.1": "shop/a", "fd00::1": "shop/a", "10.0.0.2": "shop/b"}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("origins (-want +got):\n%s", d)
		}
	})
}
