package filter

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"
	"go.uber.org/goleak"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func rec(k, ns string) node.Record {
	return node.Record{Key: k, Value: cty.ObjectVal(map[string]cty.Value{"namespace": cty.StringVal(ns)})}
}

func TestFilter(t *testing.T) {
	up := &node.Upstream{Address: "source.static.x", Type: node.Records}
	tr := nodetest.MustBuild(t, Spec(), "input = source.static.x\nwhere = record.value.namespace != \"kube-system\"", up).(*Transform)
	in, out := nodetest.NewInput(8), nodetest.NewOutput()
	env, _ := nodetest.Env(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = tr.Run(ctx, env, in, out); close(done) }()
	defer func() { cancel(); <-done }()

	bad := node.Record{Key: "weird", Value: cty.StringVal("not an object")} // expression error: dropped
	in.Send(node.Event{Reset: true, Synced: true, Snapshot: []node.Record{rec("a", "shop"), rec("b", "kube-system"), bad}})
	waitFor(t, out, func() bool { return out.Synced() })
	if d := cmp.Diff([]string{"a"}, out.Keys()); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	// a moves to kube-system: it must disappear downstream.
	r := rec("a", "kube-system")
	in.Send(node.Event{Synced: true, Deltas: []node.Delta{node.Upsert(r.Key, r.Value, time.Now())}})
	waitFor(t, out, func() bool { return len(out.Keys()) == 0 })
}

func waitFor(t *testing.T, out *nodetest.Output, cond func() bool) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for !cond() {
		select {
		case <-out.Changed():
		case <-deadline:
			t.Fatalf("timed out; state %v", out.State())
		}
	}
}
