package extract

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
)

// TestIndexModel applies random object updates to the index and checks
// every record against a naive recomputation: it exists iff some object
// yields it, with the value of the smallest such object key.
func TestIndexModel(t *testing.T) {
	for seed := range 50 {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		x := newIndex(0)
		model := map[node.Key]map[node.Key]string{} // object -> record -> value
		for range 300 {
			obj := fmt.Sprint("o", rng.IntN(8))
			if rng.IntN(4) == 0 {
				x.drop(obj, noTouch)
				delete(model, obj)
				continue
			}
			var ys []yield
			recs := map[node.Key]string{}
			for range rng.IntN(4) {
				rk := fmt.Sprint([]string{"r", "o"}[rng.IntN(2)], rng.IntN(6)) // "o": keyed as an object (yieldsOwn)
				if _, dup := recs[rk]; dup {
					continue
				}
				v := fmt.Sprint(obj, "-", rng.IntN(3))
				recs[rk] = v
				ys = append(ys, yield{key: rk, value: cty.StringVal(v)})
			}
			x.set(obj, ys, nil, noTouch)
			model[obj] = recs
		}
		want := map[node.Key]string{}
		objs := make([]node.Key, 0, len(model))
		for o := range model {
			objs = append(objs, o)
		}
		slices.Sort(objs)
		slices.Reverse(objs) // the smallest object writes last and wins
		for _, o := range objs {
			for rk, v := range model[o] {
				want[rk] = v
			}
		}
		got := map[node.Key]string{}
		for _, r := range x.records() {
			got[r.Key] = r.Value.AsString()
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("seed %d (-want +got):\n%s", seed, d)
		}
	}
}
