package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"go.uber.org/goleak"

	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// holdTransform passes each upsert hold after it arrived, on the node's clock.
type holdTransform struct{ hold time.Duration }

func (h holdTransform) Run(ctx context.Context, env node.Env, in node.Input, out node.Output) error {
	type waiting struct {
		d   node.Delta
		due time.Time
	}
	var queue []waiting
	handle := func(ev node.Event) {
		for _, r := range ev.Snapshot {
			queue = append(queue, waiting{node.Delta{Key: r.Key, Value: r.Value}, env.Now().Add(h.hold)})
		}
		for _, d := range ev.Deltas {
			queue = append(queue, waiting{d, env.Now().Add(h.hold)})
		}
		if ev.Synced {
			out.MarkSynced()
		}
	}
	fire := func() {
		var ready []node.Delta
		for len(queue) > 0 && !queue[0].due.After(env.Now()) {
			ready, queue = append(ready, queue[0].d), queue[1:]
		}
		if len(ready) > 0 {
			out.Apply(ready)
		}
	}
	next := func() (time.Time, bool) {
		if len(queue) == 0 {
			return time.Time{}, false
		}
		return queue[0].due, true
	}
	return node.ConsumeTimed(ctx, env, in, "transform.hold.h", handle, fire, next)
}

type prefixEncoder struct{}

func (prefixEncoder) Open(context.Context, node.Env, node.Mode) (node.Target, error) {
	panic("a sandbox must not open a real target")
}

func (p prefixEncoder) Encoder(node.Env) (func(node.Record) (node.Entry, error), error) {
	return p.Prepare, nil
}

func (prefixEncoder) Prepare(r node.Record) (node.Entry, error) {
	return node.Entry{Key: "enc:" + r.Key, Value: r.Value, Data: []byte(r.Key)}, nil
}

func TestSandboxRunsInVirtualTime(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	reg := node.NewRegistry(
		node.Spec{Kind: node.KindSource, Type: "script", Summary: "test", Output: node.Records,
			NewSource: func(node.Build) (node.Source, hcl.Diagnostics) { return newScriptSource(), nil }},
		node.Spec{Kind: node.KindTransform, Type: "hold", Summary: "test", Output: node.SameAsInput,
			NewTransform: func(node.Build) (node.Transform, hcl.Diagnostics) { return holdTransform{hold: time.Hour}, nil }},
		node.Spec{Kind: node.KindSink, Type: "enc", Summary: "test", Accepts: []node.DataType{node.Records},
			NewSink: func(node.Build) (node.Sink, hcl.Diagnostics) { return prefixEncoder{}, nil }},
	)
	cfg, diags := schema.NewLoader().ParseSource("test.hcl", []byte(`
source "script" "s" {}
transform "hold" "h" { input = source.script.s }
sink "enc" "e" {
  input = transform.hold.h
  prune = true
}
`), schema.Options{Environ: []string{}})
	g, more := graph.Compile(cfg, reg)
	if diags = append(diags, more...); diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	sb, err := NewSandbox(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb.Start(ctx)
	defer sb.Stop()
	keys := func() []string {
		st, err := sb.SinkState("sink.enc.e")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range st {
			out = append(out, e.Key)
		}
		return out
	}
	step := func(at time.Duration, want ...string) {
		t.Helper()
		if err := sb.AdvanceTo(ctx, at); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, keys()); diff != "" {
			t.Errorf("at %s (-want +got):\n%s", at, diff)
		}
	}
	real := time.Now()
	if err := sb.Apply("source.script.s", []node.Delta{{Key: "a", Value: cty.True}}); err != nil {
		t.Fatal(err)
	}
	if err := sb.MarkSynced("source.script.s"); err != nil {
		t.Fatal(err)
	}
	step(30 * time.Minute /* nothing yet */)
	if err := sb.Apply("source.script.s", []node.Delta{{Key: "b", Value: cty.True}}); err != nil {
		t.Fatal(err)
	}
	step(time.Hour, "enc:a")
	step(90*time.Minute, "enc:a", "enc:b")
	if took := time.Since(real); took > 10*time.Second {
		t.Errorf("90 virtual minutes took %s of real time", took)
	}
	writes, err := sb.SinkWrites("sink.enc.e")
	if err != nil {
		t.Fatal(err)
	}
	if len(writes) != 2 || string(writes[1].Entry.Data) != "b" {
		t.Errorf("writes = %+v, want the two encoded upserts", writes)
	}
	if got := sb.Now(); got != 90*time.Minute {
		t.Errorf("Now = %s", got)
	}
}

type panicTransform struct{}

func (panicTransform) Run(ctx context.Context, _ node.Env, in node.Input, _ node.Output) error {
	if _, err := in.Next(ctx); err != nil {
		return nil
	}
	panic("boom")
}

// TestSandboxFailsOnNodeFailure: a node that fails ends the step with its
// error instead of waiting for a rest that never comes.
func TestSandboxFailsOnNodeFailure(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	reg := node.NewRegistry(
		node.Spec{Kind: node.KindSource, Type: "script", Summary: "test", Output: node.Records,
			NewSource: func(node.Build) (node.Source, hcl.Diagnostics) { return newScriptSource(), nil }},
		node.Spec{Kind: node.KindTransform, Type: "boom", Summary: "test", Output: node.SameAsInput,
			NewTransform: func(node.Build) (node.Transform, hcl.Diagnostics) { return panicTransform{}, nil }},
		node.Spec{Kind: node.KindSink, Type: "enc", Summary: "test", Accepts: []node.DataType{node.Records},
			NewSink: func(node.Build) (node.Sink, hcl.Diagnostics) { return prefixEncoder{}, nil }},
	)
	cfg, diags := schema.NewLoader().ParseSource("test.hcl", []byte(`
source "script" "s" {}
transform "boom" "b" { input = source.script.s }
sink "enc" "e" { input = transform.boom.b }
`), schema.Options{Environ: []string{}})
	g, more := graph.Compile(cfg, reg)
	if diags = append(diags, more...); diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	sb, err := NewSandbox(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb.Start(ctx)
	defer sb.Stop()
	err = sb.AdvanceTo(ctx, time.Second)
	if err == nil || !strings.Contains(err.Error(), "transform.boom.b failed") {
		t.Errorf("AdvanceTo = %v, want the transform's failure", err)
	}
}
