package filter

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"
	"go.uber.org/goleak"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var up = &node.Upstream{Address: "source.static.x", Type: node.Records}

func rec(k, ns string) node.Record {
	return node.Record{Key: k, Value: cty.ObjectVal(map[string]cty.Value{"namespace": cty.StringVal(ns)})}
}

type rig struct {
	in  *nodetest.Input
	out *nodetest.Output
	reg *prometheus.Registry
}

// start runs a filter with the given where until the test ends; call it in
// a synctest bubble.
func start(t *testing.T, where string) *rig {
	t.Helper()
	tr := nodetest.MustBuild(t, Spec(), "input = source.static.x\nwhere = "+where, up).Transform.(*Transform)
	r := &rig{in: nodetest.NewInput(8), out: nodetest.NewOutput(), reg: prometheus.NewRegistry()}
	env, _ := nodetest.Env(t, r.reg)
	nodetest.RunTransform(t, tr, env, r.in, r.out)
	return r
}

func (r *rig) send(ev node.Event) {
	r.in.Send(ev)
	synctest.Wait()
}

func errorsCounted(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "pipeline_transform_expression_errors_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

func TestFilterSnapshot(t *testing.T) {
	for _, tc := range []struct {
		name, where string
		want        []string
		errors      float64
	}{
		{"by value; errors drop and count", `record.value.namespace != "kube-system"`, []string{"a"}, 2},
		{"by key", `can(regex("^[bn]", record.key))`, []string{"b", "n"}, 0},
		{"null drops", `record.key == "a" ? true : null`, []string{"a"}, 0},
		{"string true converts", `record.key == "a" ? "true" : "false"`, []string{"a"}, 0},
		{"non-bool is an error", `record.key == "a" ? "yes" : "no"`, []string{}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := start(t, tc.where)
				weird := node.Record{Key: "weird", Value: cty.StringVal("not an object")}
				r.send(node.Event{Reset: true, Synced: true, Snapshot: []node.Record{rec("a", "shop"), rec("b", "kube-system"), weird, {Key: "n", Value: cty.NullVal(cty.DynamicPseudoType)}}})
				if d := cmp.Diff(tc.want, r.out.Keys()); d != "" {
					t.Errorf("(-want +got):\n%s", d)
				}
				if got := errorsCounted(t, r.reg); got != tc.errors {
					t.Errorf("errors = %v, want %v", got, tc.errors)
				}
			})
		})
	}
}

func TestFilterDeltas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, `record.value.namespace != "kube-system"`)
		r.send(node.Event{Reset: true, Snapshot: []node.Record{rec("a", "shop")}})
		if r.out.Synced() {
			t.Fatal("synced before the input")
		}
		at := time.Now().Add(-time.Minute)
		moved, added := rec("a", "kube-system"), rec("c", "shop")
		r.send(node.Event{Synced: true, Deltas: []node.Delta{
			node.Upsert(moved.Key, moved.Value, at), node.Upsert(added.Key, added.Value, at), node.Remove("gone", at)}})
		if d := cmp.Diff([]string{"c"}, r.out.Keys()); d != "" {
			t.Fatalf("(-want +got):\n%s", d)
		}
		if !r.out.Synced() {
			t.Fatal("synced did not pass through")
		}
		batches := r.out.Batches()
		want := []node.Delta{node.Remove("a", at), node.Upsert(added.Key, added.Value, at), node.Remove("gone", at)}
		if d := cmp.Diff(want, batches[len(batches)-1], cmp.Comparer(func(a, b cty.Value) bool { return a.RawEquals(b) })); d != "" {
			t.Fatalf("deltas keep their Time (-want +got):\n%s", d)
		}
	})
}

func TestCompileErrors(t *testing.T) {
	for _, body := range []string{`where = object.namespace == "x"`, ``, `where = each.value`} {
		if _, diags := nodetest.Build(t, Spec(), "input = source.static.x\n"+body, up); !diags.HasErrors() {
			t.Errorf("%q: want an error", body)
		}
	}
}
