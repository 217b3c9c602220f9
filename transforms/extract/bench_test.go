package extract

import (
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/internal/ctyconv"
)

// BenchmarkEval measures the expressions of an extract for one object,
// a packed one as the kubernetes source emits it: built into its cty
// object, or read through its fields. flagship is P1c's extract, podIPs
// one with for_each. BenchmarkChain in package transforms measures the
// chain.
func BenchmarkEval(b *testing.B) {
	b.Run("flagship", func(b *testing.B) {
		benchEval(b, "where = try(object.status.podIP, \"\") != \"\"\nkey = object.status.podIP")
	})
	b.Run("podIPs", func(b *testing.B) { benchEval(b, podIPs) })
}

func benchEval(b *testing.B, body string) {
	tr := nodetest.MustBuild(b, Spec(), "input = source.kubernetes.pods\n"+body, objects).Transform.(*Transform)
	v, err := ctyconv.ToCty(map[string]any{
		"metadata": map[string]any{"name": "a", "namespace": "shop", "labels": map[string]any{"app": "x"}},
		"status":   map[string]any{"phase": "Running", "podIP": "10.0.0.1", "podIPs": []any{map[string]any{"ip": "10.0.0.1"}}},
	})
	if err != nil {
		b.Fatal(err)
	}
	builds := 0
	for _, c := range []struct {
		name string
		obj  cty.Value
	}{{"built", node.PackedVal(builtObj{fieldsObj{v: v, builds: new(int)}})}, {"fields", node.PackedVal(fieldsObj{v: v, builds: &builds})}} {
		b.Run(c.name, func(b *testing.B) {
			ev := newEvaluator(tr)
			b.ReportAllocs()
			for b.Loop() {
				if ys, err := ev.eval("shop/web-1", c.obj); err != nil || len(ys) != 1 {
					b.Fatal(ys, err)
				}
			}
		})
	}
	if builds != 0 {
		b.Fatalf("the packed object was built %d times", builds)
	}
}
