package extract

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"
	"go.uber.org/goleak"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/internal/ctyconv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var objects = &node.Upstream{Address: "source.kubernetes.pods", Type: node.Objects}

func pod(t *testing.T, name, phase string, ips ...string) node.Record {
	t.Helper()
	var podIPs []any
	for _, ip := range ips {
		podIPs = append(podIPs, map[string]any{"ip": ip})
	}
	status := map[string]any{"phase": phase, "podIPs": podIPs}
	if len(ips) > 0 {
		status["podIP"] = ips[0]
	}
	v, err := ctyconv.ToCty(map[string]any{"metadata": map[string]any{"name": name, "namespace": "shop"}, "status": status})
	if err != nil {
		t.Fatal(err)
	}
	return node.Record{Key: "shop/" + name, Value: v}
}

type rig struct {
	in  *nodetest.Input
	out *nodetest.Output
}

func run(t *testing.T, body string) *rig {
	t.Helper()
	tr := nodetest.MustBuild(t, Spec(), "input = source.kubernetes.pods\n"+body, objects).(*Transform)
	r := &rig{in: nodetest.NewInput(16), out: nodetest.NewOutput()}
	env, _ := nodetest.Env(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = tr.Run(ctx, env, r.in, r.out); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

// settle waits until the output has n batches or the synced flag.
func (r *rig) wait(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for !cond() {
		select {
		case <-r.out.Changed():
		case <-deadline:
			t.Fatalf("timed out; state %v", r.out.State())
		}
	}
}

func jsonOf(v cty.Value) string { return ctyconv.String(v) }

const podIPs = `
where    = object.status.phase == "Running"
for_each = object.status.podIPs
key      = each.value.ip
value    = { pod = object.metadata.name }
`

func TestForEachWhereKeyValue(t *testing.T) {
	r := run(t, podIPs)
	r.in.Send(node.Event{Reset: true, Synced: true, Snapshot: []node.Record{
		pod(t, "a", "Running", "10.0.0.1", "fd00::1"),
		pod(t, "b", "Pending", "10.0.0.2"),
	}})
	r.wait(t, r.out.Synced)
	got := map[string]string{}
	for k, v := range r.out.State() {
		got[k] = jsonOf(v)
	}
	want := map[string]string{"10.0.0.1": `{"pod":"a"}`, "fd00::1": `{"pod":"a"}`}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
}

func TestSharedKeyIsRefcounted(t *testing.T) {
	r := run(t, podIPs)
	r.in.Send(node.Event{Reset: true, Synced: true, Snapshot: []node.Record{
		pod(t, "b", "Running", "10.0.0.9"), pod(t, "a", "Running", "10.0.0.9"),
	}})
	r.wait(t, r.out.Synced)
	if got := jsonOf(r.out.State()["10.0.0.9"]); got != `{"pod":"a"}` {
		t.Fatalf("value must come from the smallest object key: %s", got)
	}
	r.in.Send(node.Event{Synced: true, Deltas: []node.Delta{node.Remove("shop/a", time.Now())}})
	r.wait(t, func() bool { return jsonOf(r.out.State()["10.0.0.9"]) == `{"pod":"b"}` })
	r.in.Send(node.Event{Synced: true, Deltas: []node.Delta{node.Remove("shop/b", time.Now())}})
	r.wait(t, func() bool { return len(r.out.State()) == 0 })
}

func TestUpdateMovesKey(t *testing.T) {
	r := run(t, podIPs)
	r.in.Send(node.Event{Reset: true, Synced: true, Snapshot: []node.Record{pod(t, "a", "Running", "10.0.0.1")}})
	r.wait(t, r.out.Synced)
	p := pod(t, "a", "Running", "10.0.0.2")
	r.in.Send(node.Event{Synced: true, Deltas: []node.Delta{node.Upsert(p.Key, p.Value, time.Now())}})
	r.wait(t, func() bool { return cmp.Equal(r.out.Keys(), []string{"10.0.0.2"}) })
}

func TestExpressionErrorSkipsOnlyThatObject(t *testing.T) {
	r := run(t, `key = object.status.podIP`)
	bad := pod(t, "nop", "Pending") // no podIP attribute: error
	r.in.Send(node.Event{Reset: true, Synced: true, Snapshot: []node.Record{bad, pod(t, "a", "Running", "10.0.0.1")}})
	r.wait(t, r.out.Synced)
	if d := cmp.Diff([]string{"10.0.0.1"}, r.out.Keys()); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
}

func TestJSONPath(t *testing.T) {
	r := run(t, `
key   = jsonpath(object, "{.status.podIP}")
value = { ips = jsonpath(object, "{.status.podIPs[*].ip}"), missing = jsonpath(object, "{.spec.nodeName}") }
`)
	r.in.Send(node.Event{Reset: true, Synced: true, Snapshot: []node.Record{pod(t, "a", "Running", "10.0.0.1", "fd00::1")}})
	r.wait(t, r.out.Synced)
	if got := jsonOf(r.out.State()["10.0.0.1"]); got != `{"ips":["10.0.0.1","fd00::1"],"missing":null}` {
		t.Fatalf("value = %s", got)
	}
}

func TestCompileErrors(t *testing.T) {
	for name, body := range map[string]string{
		"bad jsonpath":  `key = jsonpath(object, "{.status[")`,
		"wrong root":    `key = record.key`,
		"missing key":   `where = true`,
		"unknown func":  `key = nope(object)`,
		"each in where": `where = each.value`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, diags := nodetest.Build(t, Spec(), "input = source.kubernetes.pods\n"+body, objects); !diags.HasErrors() {
				t.Fatal("want a diagnostic")
			}
		})
	}
}

func BenchmarkEval(b *testing.B) {
	tr := nodetest.MustBuild(b, Spec(), "input = source.kubernetes.pods\n"+podIPs, objects).(*Transform)
	var obj any
	_ = json.Unmarshal([]byte(`{"metadata":{"name":"a","namespace":"shop","labels":{"app":"x"}},"status":{"phase":"Running","podIP":"10.0.0.1","podIPs":[{"ip":"10.0.0.1"}]}}`), &obj)
	v, _ := ctyconv.ToCty(obj)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tr.eval(v); err != nil {
			b.Fatal(err)
		}
	}
}
