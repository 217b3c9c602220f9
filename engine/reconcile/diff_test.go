package reconcile

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
)

func TestDiff(t *testing.T) {
	v := func(s string) node.Entry { return node.Entry{Value: cty.StringVal(s)} }
	desired := map[node.Key]node.Entry{"a": v("1"), "b": v("2"), "c": v("3")}
	actual := map[node.Key]node.Entry{"b": v("2"), "c": v("x"), "d": v("4")}
	type row struct {
		A      string
		K      string
		Before string
		After  string
	}
	str := func(x cty.Value) string {
		if x == cty.NilVal {
			return ""
		}
		return x.AsString()
	}
	for _, tc := range []struct {
		name  string
		prune bool
		want  []row
	}{
		{"prune", true, []row{{"create", "a", "", "1"}, {"update", "c", "x", "3"}, {"delete", "d", "4", ""}}},
		{"no prune", false, []row{{"create", "a", "", "1"}, {"update", "c", "x", "3"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []row
			changes := Diff("sink.x.y", desired, actual, tc.prune)
			Sort(changes)
			for _, c := range changes {
				got = append(got, row{c.Action.String(), c.Key, str(c.Old.Value), str(c.New.Value)})
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Fatalf("(-want +got)\n%s", d)
			}
		})
	}
}
