package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// scriptSource applies the functions sent to it, in order.
type scriptSource struct {
	ops  chan func(node.Output)
	mu   sync.Mutex
	runs int
	// failFirst makes the first run fail after applying nothing.
	failFirst bool
	// pending, when set, is the detail of the Pending health each run
	// reports first.
	pending string
}

func newScriptSource() *scriptSource { return &scriptSource{ops: make(chan func(node.Output), 1024)} }

func (s *scriptSource) Run(ctx context.Context, env node.Env, out node.Output) error {
	if s.pending != "" {
		env.Health.Set(node.Pending, s.pending)
	}
	s.mu.Lock()
	s.runs++
	fail := s.failFirst && s.runs == 1
	s.mu.Unlock()
	if fail {
		return context.DeadlineExceeded
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case op := <-s.ops:
			op(out)
		}
	}
}

// passTransform emits its input unchanged.
type passTransform struct{}

func (passTransform) Run(ctx context.Context, _ node.Env, in node.Input, out node.Output) error {
	for {
		ev, err := in.Next(ctx)
		if err != nil {
			return nil
		}
		if ev.Reset {
			out.Replace(ev.Snapshot)
		}
		if len(ev.Deltas) > 0 {
			out.Apply(append([]node.Delta(nil), ev.Deltas...))
		}
		if ev.Synced {
			out.MarkSynced()
		}
	}
}

// testRegistry has a "script" source, a "pass" transform and a "mem" sink
// whose implementations come from impls, keyed by address.
func testRegistry(impls map[string]any) *node.Registry {
	return node.NewRegistry(
		node.Spec{Kind: node.KindSource, Type: "script", Summary: "test", Output: node.Records, NewSource: pick[node.Source](impls)},
		node.Spec{Kind: node.KindSource, Type: "objects", Summary: "test", Output: node.Objects, NewSource: pick[node.Source](impls)},
		node.Spec{Kind: node.KindTransform, Type: "pass", Summary: "test", Output: node.SameAsInput,
			NewTransform: func(node.Build) (node.Transform, hcl.Diagnostics) { return passTransform{}, nil }},
		node.Spec{Kind: node.KindSink, Type: "mem", Summary: "test", Accepts: []node.DataType{node.Records}, NewSink: pick[node.Sink](impls)},
	)
}

// pick returns a constructor that builds the node impls holds at the
// node's address, or none when it holds none. A node of another kind
// there is a mistake in the test.
func pick[T any](impls map[string]any) func(node.Build) (T, hcl.Diagnostics) {
	return func(b node.Build) (T, hcl.Diagnostics) {
		impl, ok := impls[b.Address].(T)
		if !ok && impls[b.Address] != nil {
			panic(fmt.Sprintf("%s: the test's node is a %T", b.Address, impls[b.Address]))
		}
		return impl, nil
	}
}

func compileText(t *testing.T, src string, impls map[string]any) (*graph.Graph, hcl.Diagnostics) {
	t.Helper()
	cfg, diags := schema.NewLoader().ParseSource("test.hcl", []byte(src), schema.Options{Environ: []string{}})
	if diags.HasErrors() {
		t.Fatalf("parse: %s", diags.Error())
	}
	return graph.Compile(cfg, testRegistry(impls))
}

func mustCompile(t *testing.T, src string, impls map[string]any) *graph.Graph {
	t.Helper()
	g, diags := compileText(t, src, impls)
	if diags.HasErrors() {
		t.Fatalf("compile: %s", diags.Error())
	}
	return g
}
