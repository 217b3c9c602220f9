package extract

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
	"github.com/pipeline/pipeline/internal/ctyconv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var objects = &node.Upstream{Address: "source.kubernetes.pods", Type: node.Objects}

// obj builds an object from a JSON-like Go value.
func obj(t *testing.T, key string, v map[string]any) node.Record {
	t.Helper()
	cv, err := ctyconv.ToCty(v)
	if err != nil {
		t.Fatal(err)
	}
	return node.Record{Key: key, Value: cv}
}

// pod is a pod object in namespace shop with the given phase and IPs.
func pod(t *testing.T, name, phase string, ips ...string) node.Record {
	t.Helper()
	podIPs := []any{}
	for _, ip := range ips {
		podIPs = append(podIPs, map[string]any{"ip": ip})
	}
	status := map[string]any{"phase": phase, "podIPs": podIPs}
	if len(ips) > 0 {
		status["podIP"] = ips[0]
	}
	return obj(t, "shop/"+name, map[string]any{"metadata": map[string]any{"name": name, "namespace": "shop"}, "status": status})
}

func upsert(r node.Record, at time.Time) node.Delta { return node.Upsert(r.Key, r.Value, at) }

type rig struct {
	in  *nodetest.Input
	out *nodetest.Output
	reg *prometheus.Registry
}

// start builds an extract from body and runs it until the test ends. Call
// it inside a synctest bubble and synctest.Wait() before reading out.
func start(t *testing.T, up *node.Upstream, body string) *rig {
	t.Helper()
	tr := nodetest.MustBuild(t, Spec(), "input = "+up.Address+"\n"+body, up).Transform.(*Transform)
	r := &rig{in: nodetest.NewInput(16), out: nodetest.NewOutput(), reg: prometheus.NewRegistry()}
	env, _ := nodetest.Env(t, r.reg)
	nodetest.RunTransform(t, tr, env, r.in, r.out)
	return r
}

// send delivers an event and waits until the transform is idle.
func (r *rig) send(ev node.Event) {
	r.in.Send(ev)
	synctest.Wait()
}

func (r *rig) reset(recs ...node.Record) {
	r.send(node.Event{Reset: true, Synced: true, Snapshot: recs})
}

func (r *rig) deltas(ds ...node.Delta) { r.send(node.Event{Synced: true, Deltas: ds}) }

// state renders the output as key -> JSON.
func (r *rig) state() map[string]string {
	got := map[string]string{}
	for k, v := range r.out.State() {
		got[k] = ctyconv.String(v)
	}
	return got
}

// metric sums the samples of a counter family.
func metric(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

const podIPs = `
where    = object.status.phase == "Running"
for_each = object.status.podIPs
key      = each.value.ip
value    = { pod = object.metadata.name }
`

func TestExtract(t *testing.T) {
	cm := func(data map[string]any) node.Record {
		return obj(t, "ingress/haproxy", map[string]any{"data": data, "port": 8080})
	}
	for _, tc := range []struct {
		name, body string
		in         []node.Record
		want       map[string]string
		skipped    float64
	}{
		{name: "where for_each key value", body: podIPs,
			in:   []node.Record{pod(t, "a", "Running", "10.0.0.1", "fd00::1"), pod(t, "b", "Pending", "10.0.0.2")},
			want: map[string]string{"10.0.0.1": `{"pod":"a"}`, "fd00::1": `{"pod":"a"}`}},
		{name: "one record per object, value defaults to {}", body: `key = object.status.podIP`,
			in:   []node.Record{pod(t, "a", "Running", "10.0.0.1")},
			want: map[string]string{"10.0.0.1": `{}`}},
		{name: "for_each over a map", body: "for_each = object.data\nkey = each.key\nvalue = each.value",
			in:   []node.Record{cm(map[string]any{"maxconn": "100", "timeout": "5s"})},
			want: map[string]string{"maxconn": `"100"`, "timeout": `"5s"`}},
		{name: "list index as each.key and number keys", body: "for_each = object.status.podIPs\nkey = each.key\nvalue = each.value.ip",
			in:   []node.Record{pod(t, "a", "Running", "10.0.0.1", "fd00::1")},
			want: map[string]string{"0": `"10.0.0.1"`, "1": `"fd00::1"`}},
		{name: "numeric key converted", body: "key = object.port",
			in: []node.Record{cm(nil)}, want: map[string]string{"8080": `{}`}},
		{name: "null and empty keys skip with a count", body: "for_each = [\"x\", \"\", null]\nkey = each.value",
			in: []node.Record{cm(nil)}, want: map[string]string{"x": `{}`}, skipped: 2},
		{name: "same key twice in one object: last wins", body: "for_each = [1, 2]\nkey = \"k\"\nvalue = each.value",
			in: []node.Record{cm(nil)}, want: map[string]string{"k": `2`}},
		{name: "null where yields nothing", body: "where = null\nkey = \"k\"",
			in: []node.Record{cm(nil)}, want: map[string]string{}},
		{name: "null for_each", body: "for_each = null\nkey = \"k\"",
			in: []node.Record{cm(nil)}, want: map[string]string{}},
		{name: "functions and var in scope", body: "key = upper(object.metadata.name)\nvalue = lower(\"X\")",
			in: []node.Record{pod(t, "a", "Running")}, want: map[string]string{"A": `"x"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := start(t, objects, tc.body)
				r.reset(tc.in...)
				if d := cmp.Diff(tc.want, r.state()); d != "" {
					t.Errorf("(-want +got):\n%s", d)
				}
				if got := metric(t, r.reg, "pipeline_transform_skipped_records_total"); got != tc.skipped {
					t.Errorf("skipped = %v, want %v", got, tc.skipped)
				}
				if got := metric(t, r.reg, "pipeline_transform_expression_errors_total"); got != 0 {
					t.Errorf("expression errors = %v", got)
				}
			})
		})
	}
}

func TestOverRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		up := &node.Upstream{Address: "source.static.hosts", Type: node.Records}
		r := start(t, up, "for_each = object.ips\nkey = \"${each.value}/32\"\nvalue = { role = object.role }")
		r.reset(obj(t, "web", map[string]any{"ips": []any{"10.0.0.7"}, "role": "frontend"}))
		if d := cmp.Diff(map[string]string{"10.0.0.7/32": `{"role":"frontend"}`}, r.state()); d != "" {
			t.Fatalf("(-want +got):\n%s", d)
		}
	})
}

// TestSharedKeyIsRefcounted: two pods share an IP. The record lives while
// either yields it and takes the value of the smallest object key.
func TestSharedKeyIsRefcounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, objects, podIPs)
		r.reset(pod(t, "b", "Running", "10.0.0.9"), pod(t, "a", "Running", "10.0.0.9", "10.0.0.1"))
		want := map[string]string{"10.0.0.9": `{"pod":"a"}`, "10.0.0.1": `{"pod":"a"}`}
		if d := cmp.Diff(want, r.state()); d != "" {
			t.Fatalf("value must come from the smallest object key (-want +got):\n%s", d)
		}
		r.deltas(node.Remove("shop/a", time.Now()))
		if d := cmp.Diff(map[string]string{"10.0.0.9": `{"pod":"b"}`}, r.state()); d != "" {
			t.Fatalf("deleting a must keep b's IP (-want +got):\n%s", d)
		}
		r.deltas(upsert(pod(t, "c", "Running", "10.0.0.9"), time.Now()), node.Remove("shop/b", time.Now()))
		if d := cmp.Diff(map[string]string{"10.0.0.9": `{"pod":"c"}`}, r.state()); d != "" {
			t.Fatalf("(-want +got):\n%s", d)
		}
		r.deltas(upsert(pod(t, "c", "Pending", "10.0.0.9"), time.Now())) // c stops yielding it
		if d := cmp.Diff(map[string]string{}, r.state()); d != "" {
			t.Fatalf("(-want +got):\n%s", d)
		}
	})
}

// TestOnlyChangesArePublished: an object update that leaves its records
// alone publishes nothing; a change publishes exactly the changed records,
// with the input delta's Time.
func TestOnlyChangesArePublished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, objects, podIPs)
		r.reset(pod(t, "a", "Running", "10.0.0.1", "10.0.0.2"))
		base := len(r.out.Batches())
		a := pod(t, "a", "Running", "10.0.0.1", "10.0.0.2")
		r.deltas(upsert(a, time.Now()))
		if n := len(r.out.Batches()) - base; n != 0 {
			t.Fatalf("an unchanged object published %d batches", n)
		}
		at := time.Now().Add(-time.Second)
		r.deltas(upsert(pod(t, "a", "Running", "10.0.0.1", "10.0.0.3"), at))
		batches := r.out.Batches()[base:]
		want := []node.Delta{node.Remove("10.0.0.2", at), node.Upsert("10.0.0.3", cty.ObjectVal(map[string]cty.Value{"pod": cty.StringVal("a")}), at)}
		if len(batches) != 1 {
			t.Fatalf("want one batch, got %v", batches)
		}
		if d := cmp.Diff(want, batches[0], cmp.Comparer(func(a, b cty.Value) bool { return a.RawEquals(b) })); d != "" {
			t.Fatalf("(-want +got):\n%s", d)
		}
	})
}

func TestExpressionErrorSkipsOnlyThatObject(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, objects, `key = object.status.podIP`)
		r.reset(pod(t, "nop", "Pending"), pod(t, "a", "Running", "10.0.0.1")) // nop has no podIP: error
		if d := cmp.Diff(map[string]string{"10.0.0.1": `{}`}, r.state()); d != "" {
			t.Fatalf("(-want +got):\n%s", d)
		}
		if got := metric(t, r.reg, "pipeline_transform_expression_errors_total"); got != 1 {
			t.Fatalf("expression errors = %v, want 1", got)
		}
		// a breaks: its record goes; nop is fixed: its record comes.
		broken := obj(t, "shop/a", map[string]any{"status": map[string]any{}})
		r.deltas(upsert(broken, time.Now()), upsert(pod(t, "nop", "Running", "10.0.0.2"), time.Now()))
		if d := cmp.Diff(map[string]string{"10.0.0.2": `{}`}, r.state()); d != "" {
			t.Fatalf("(-want +got):\n%s", d)
		}
		if got := metric(t, r.reg, "pipeline_transform_expression_errors_total"); got != 2 {
			t.Fatalf("expression errors = %v, want 2", got)
		}
	})
}

func TestResetRebuilds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, objects, podIPs)
		r.reset(pod(t, "a", "Running", "10.0.0.1"), pod(t, "b", "Running", "10.0.0.9"))
		r.deltas(upsert(pod(t, "c", "Running", "10.0.0.9"), time.Now()))
		// The input fell behind and resynchronised: b is gone, c moved.
		r.reset(pod(t, "a", "Running", "10.0.0.1"), pod(t, "c", "Running", "10.0.0.3"))
		want := map[string]string{"10.0.0.1": `{"pod":"a"}`, "10.0.0.3": `{"pod":"c"}`}
		if d := cmp.Diff(want, r.state()); d != "" {
			t.Fatalf("(-want +got):\n%s", d)
		}
		r.deltas(node.Remove("shop/c", time.Now())) // the rebuilt indexes know c
		if d := cmp.Diff(map[string]string{"10.0.0.1": `{"pod":"a"}`}, r.state()); d != "" {
			t.Fatalf("(-want +got):\n%s", d)
		}
	})
}

func TestSyncedPassesThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, objects, podIPs)
		r.send(node.Event{Reset: true, Snapshot: []node.Record{pod(t, "a", "Running", "10.0.0.1")}})
		if r.out.Synced() {
			t.Fatal("synced before the input")
		}
		r.send(node.Event{Synced: true})
		if !r.out.Synced() {
			t.Fatal("not synced after the input")
		}
	})
}

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct{ name, body, summary string }{
		{"bad jsonpath", `key = jsonpath(object, "{.status[")`, "Invalid function argument"},
		{"wrong root", `key = item.key`, "Invalid reference"},
		{"missing key", `where = true`, "Missing required argument"},
		{"unknown func", `key = nope(object)`, "Call to unknown function"},
		{"each in where", "for_each = [1]\nwhere = each.value\nkey = \"k\"", "Invalid reference"},
		{"each without for_each", `key = each.value`, "Reference to each without for_each"},
		{"each in value without for_each", "key = \"k\"\nvalue = each.key", "Reference to each without for_each"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := nodetest.Build(t, Spec(), "input = source.kubernetes.pods\n"+tc.body, objects)
			var got []string
			for _, d := range diags {
				got = append(got, d.Summary)
			}
			if !strings.Contains(strings.Join(got, "\n"), tc.summary) {
				t.Fatalf("diagnostics %q, want %q", got, tc.summary)
			}
		})
	}
}

func TestMisspeltFunctionSuggestsOthers(t *testing.T) {
	_, diags := nodetest.Build(t, Spec(), "input = source.kubernetes.pods\nkey = lowr(object.name)", objects)
	if !diags.HasErrors() || !strings.Contains(diags[0].Detail, `Did you mean "lower"?`) {
		t.Fatalf("diagnostics: %v", diags)
	}
}

// TestRecordKey: record.key and record.value re-key and filter the records
// of a records input (static, nats_kv, a fan-in) by their key.
func TestRecordKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		up := &node.Upstream{Address: "source.static.hosts", Type: node.Records}
		r := start(t, up, "where = substr(record.key, 0, 3) == \"web\"\nkey = \"host/${record.key}\"\nvalue = { role = record.value.role }")
		r.reset(obj(t, "web-1", map[string]any{"role": "frontend"}), obj(t, "db-1", map[string]any{"role": "db"}))
		if d := cmp.Diff(map[string]string{"host/web-1": `{"role":"frontend"}`}, r.state()); d != "" {
			t.Fatalf("(-want +got):\n%s", d)
		}
	})
}
