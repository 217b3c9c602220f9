package aggregate

import (
	"strings"
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

var up = &node.Upstream{Address: "transform.extract.x", Type: node.Records}

// join pairs each route with its service: a lookup table in let, one
// record per route.
const join = `input = transform.extract.x
let = {
  services = { for r in records : r.value.name => r.value if r.value.kind == "service" }
  ports    = { for name, s in let.services : name => s.port }
}
for_each = [for r in records : r.value if r.value.kind == "route"]
key      = each.value.name
value    = { service = each.value.service, port = try(let.ports[each.value.service], null) }
`

func route(name, svc string) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{"kind": cty.StringVal("route"), "name": cty.StringVal(name), "service": cty.StringVal(svc)})
}

func service(name string, port int64) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{"kind": cty.StringVal("service"), "name": cty.StringVal(name), "port": cty.NumberIntVal(port)})
}

type rig struct {
	in     *nodetest.Input
	out    *nodetest.Output
	reg    *prometheus.Registry
	health *nodetest.HealthRecorder
}

func start(t *testing.T, body string) *rig {
	t.Helper()
	tr := nodetest.MustBuild(t, Spec(), body, up).Transform.(*Transform)
	r := &rig{in: nodetest.NewInput(8), out: nodetest.NewOutput(), reg: prometheus.NewRegistry()}
	env, h := nodetest.Env(t, r.reg)
	r.health = h
	nodetest.RunTransform(t, tr, env, r.in, r.out)
	return r
}

func (r *rig) send(ev node.Event) {
	r.in.Send(ev)
	synctest.Wait()
}

// ports returns the output as route -> port text ("null" when the join
// found nothing).
func (r *rig) ports() map[string]string {
	got := map[string]string{}
	for k, v := range r.out.State() {
		p := v.GetAttr("port")
		if p.IsNull() {
			got[k] = "null"
			continue
		}
		got[k] = p.AsBigFloat().Text('f', -1)
	}
	return got
}

func TestJoinFollowsEveryInputChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, join)
		r.send(node.Event{Reset: true, Snapshot: []node.Record{{Key: "r/web", Value: route("web", "web")}}})
		if len(r.out.Keys()) != 0 || r.out.Synced() {
			t.Fatal("emitted before the input synced")
		}
		r.send(node.Event{Synced: true, Deltas: []node.Delta{node.Upsert("s/web", service("web", 8080), time.Now())}})
		if d := cmp.Diff(map[string]string{"web": "8080"}, r.ports()); d != "" {
			t.Fatalf("(-want +got):\n%s", d)
		}
		if !r.out.Synced() {
			t.Fatal("not synced after the first evaluation")
		}
		// The service changes its port: the route's record follows; a
		// route to a missing service gets null.
		r.send(node.Event{Deltas: []node.Delta{
			node.Upsert("s/web", service("web", 9090), time.Now()),
			node.Upsert("r/api", route("api", "api"), time.Now()),
		}})
		if d := cmp.Diff(map[string]string{"web": "9090", "api": "null"}, r.ports()); d != "" {
			t.Fatalf("(-want +got):\n%s", d)
		}
		n := len(r.out.Batches())
		// An unrelated change re-evaluates, and publishes nothing.
		r.send(node.Event{Deltas: []node.Delta{node.Upsert("x/other", cty.ObjectVal(map[string]cty.Value{"kind": cty.StringVal("other")}), time.Now())}})
		if got := len(r.out.Batches()); got != n {
			t.Errorf("an unchanged output was published again: %d batches, want %d", got, n)
		}
		// Deleting the service and the route.
		r.send(node.Event{Deltas: []node.Delta{node.Remove("s/web", time.Now()), node.Remove("r/api", time.Now())}})
		if d := cmp.Diff(map[string]string{"web": "null"}, r.ports()); d != "" {
			t.Fatalf("(-want +got):\n%s", d)
		}
	})
}

func TestFailedEvaluationKeepsOutput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		body := `input = transform.extract.x
let = { n = { for r in records : r.value.name => r.value.n } }
for_each = let.n
key   = each.key
value = { n = each.value * 2 }
`
		r := start(t, body)
		num := func(name string, n cty.Value) node.Record {
			return node.Record{Key: name, Value: cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal(name), "n": n})}
		}
		r.send(node.Event{Reset: true, Synced: true, Snapshot: []node.Record{num("a", cty.NumberIntVal(1))}})
		// A second "a" repeats a key of the for expression: let fails as a
		// whole, and the output stays.
		r.send(node.Event{Deltas: []node.Delta{node.Upsert("a2", num("a", cty.NumberIntVal(2)).Value, time.Now())}})
		if d := cmp.Diff([]string{"a"}, r.out.Keys()); d != "" {
			t.Fatalf("(-want +got):\n%s", d)
		}
		if r.health.State() != node.Degraded {
			t.Errorf("health = %v, want degraded", r.health.State())
		}
		// One element's value fails: skipped, the others go on.
		r.send(node.Event{Deltas: []node.Delta{node.Remove("a2", time.Now()), node.Upsert("b", num("b", cty.StringVal("x")).Value, time.Now())}})
		if d := cmp.Diff([]string{"a"}, r.out.Keys()); d != "" {
			t.Fatalf("(-want +got):\n%s", d)
		}
		if r.health.State() != node.Healthy {
			t.Errorf("health = %v, want healthy", r.health.State())
		}
		if got := counter(t, r.reg); got != 2 {
			t.Errorf("errors counted = %v, want 2", got)
		}
	})
}

func counter(t *testing.T, reg *prometheus.Registry) float64 {
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

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"let = { a = let.b, b = 1 }\nfor_each = []\nkey = 1", "Reference to a later let entry"},
		{"let = { a = 1, a = 2 }\nfor_each = []\nkey = 1", "Duplicate let name"},
		{"let = merge({})\nfor_each = []\nkey = 1", "Invalid let"},
		{"for_each = object\nkey = 1", "Invalid reference"},
		{"for_each = []\nkey = each.key\nvalue = other.x", "Invalid reference"},
		{"key = 1", "for_each"},
	} {
		_, diags := nodetest.Build(t, Spec(), "input = transform.extract.x\n"+tc.body, up)
		if !diags.HasErrors() || !strings.Contains(diags.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error naming %q", tc.body, diags, tc.want)
		}
	}
}
