package extract

import (
	"testing"

	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/internal/ctyconv"
)

// BenchmarkEval measures the expressions of the flagship pod-IP extract
// for one object. BenchmarkChain in package transforms measures the chain.
func BenchmarkEval(b *testing.B) {
	tr := nodetest.MustBuild(b, Spec(), "input = source.kubernetes.pods\n"+podIPs, objects).Transform.(*Transform)
	v, err := ctyconv.ToCty(map[string]any{
		"metadata": map[string]any{"name": "a", "namespace": "shop", "labels": map[string]any{"app": "x"}},
		"status":   map[string]any{"phase": "Running", "podIP": "10.0.0.1", "podIPs": []any{map[string]any{"ip": "10.0.0.1"}}},
	})
	if err != nil {
		b.Fatal(err)
	}
	ev := newEvaluator(tr)
	b.ReportAllocs()
	for b.Loop() {
		if ys, err := ev.eval("shop/web-1", v); err != nil || len(ys) != 1 {
			b.Fatal(ys, err)
		}
	}
}
