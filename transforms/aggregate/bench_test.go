package aggregate

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// BenchmarkJoin times one evaluation of the join of N routes with N
// services (2N records): what every change of the input costs.
func BenchmarkJoin(b *testing.B) {
	for _, n := range []int{100, 1000, 3000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			tr := nodetest.MustBuild(b, Spec(), join, up).Transform.(*Transform)
			env, _ := nodetest.Env(b, prometheus.NewRegistry())
			r := &runner{t: tr, env: env, errs: prometheus.NewCounter(prometheus.CounterOpts{Name: "x"}), in: map[node.Key]cty.Value{}}
			for i := range n {
				r.in[fmt.Sprintf("r/%05d", i)] = route(fmt.Sprintf("r%05d", i), fmt.Sprintf("s%05d", i))
				r.in[fmt.Sprintf("s/%05d", i)] = service(fmt.Sprintf("s%05d", i), int64(i))
			}
			b.ResetTimer()
			for b.Loop() {
				recs, err := r.evaluate()
				if err != nil || len(recs) != n {
					b.Fatalf("%d records, %v", len(recs), err)
				}
			}
		})
	}
}
