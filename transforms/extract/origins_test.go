package extract

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// TestOriginsReported: with env.Origins set (plan), every record key
// yielded is reported with the object yielding it, from a reset and from
// deltas alike.
func TestOriginsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := nodetest.MustBuild(t, Spec(), "input = "+objects.Address+"\n"+podIPs, objects).Transform.(*Transform)
		r := &rig{in: nodetest.NewInput(16), out: nodetest.NewOutput(), reg: prometheus.NewRegistry()}
		env, _ := nodetest.Env(t, r.reg)
		var mu sync.Mutex
		got := map[node.Key]node.Key{}
		env.Origins = func(out, in node.Key) {
			mu.Lock()
			got[out] = in
			mu.Unlock()
		}
		nodetest.RunTransform(t, tr, env, r.in, r.out)
		r.reset(pod(t, "a", "Running", "10.0.0.1", "fd00::1"), pod(t, "p", "Pending", "10.0.0.9"))
		r.deltas(upsert(pod(t, "b", "Running", "10.0.0.2"), time.Now()))
		mu.Lock()
		defer mu.Unlock()
		want := map[node.Key]node.Key{"10.0.0.1": "shop/a", "fd00::1": "shop/a", "10.0.0.2": "shop/b"}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("origins (-want +got):\n%s", d)
		}
	})
}
