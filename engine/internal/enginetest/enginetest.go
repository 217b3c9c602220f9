// Package enginetest holds the fakes that the engine's runtime tests and
// plan's tests share: a scripted source, a transform that passes its
// input on, and a registry of them with a sink a test supplies. Only
// _test.go files import it (TestImportRules); node types test against
// engine/node/nodetest instead.
package enginetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// ScriptSource applies the functions sent on Ops, in order.
type ScriptSource struct {
	Ops chan func(node.Output)
	// FailFirst makes the first run fail after applying nothing.
	FailFirst bool
	// Pending, when set, is the detail of the Pending health each run
	// reports first.
	Pending string

	mu   sync.Mutex
	runs int
}

// NewScriptSource returns a ScriptSource whose Ops holds 1024 functions.
func NewScriptSource() *ScriptSource {
	return &ScriptSource{Ops: make(chan func(node.Output), 1024)}
}

// Runs is how many times Run was called.
func (s *ScriptSource) Runs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs
}

// Run implements node.Source.
func (s *ScriptSource) Run(ctx context.Context, env node.Env, out node.Output) error {
	if s.Pending != "" {
		env.Health.Set(node.Pending, s.Pending)
	}
	s.mu.Lock()
	s.runs++
	fail := s.FailFirst && s.runs == 1
	s.mu.Unlock()
	if fail {
		return context.DeadlineExceeded
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case op := <-s.Ops:
			op(out)
		}
	}
}

// PassTransform emits its input unchanged.
type PassTransform struct{}

// Run implements node.Transform.
func (PassTransform) Run(ctx context.Context, _ node.Env, in node.Input, out node.Output) error {
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

// Registry has a "script" and an "objects" source, a "pass" transform and
// a "mem" sink whose implementations come from impls, keyed by address.
func Registry(impls map[string]any) *node.Registry {
	return node.NewRegistry(
		node.Spec{Kind: node.KindSource, Type: "script", Summary: "test", Output: node.Records, NewSource: Pick[node.Source](impls)},
		node.Spec{Kind: node.KindSource, Type: "objects", Summary: "test", Output: node.Objects, NewSource: Pick[node.Source](impls)},
		node.Spec{Kind: node.KindTransform, Type: "pass", Summary: "test", Output: node.SameAsInput,
			NewTransform: func(node.Build) (node.Transform, hcl.Diagnostics) { return PassTransform{}, nil }},
		node.Spec{Kind: node.KindSink, Type: "mem", Summary: "test", Accepts: []node.DataType{node.Records}, NewSink: Pick[node.Sink](impls)},
	)
}

// Pick returns a constructor that builds the node impls holds at the
// node's address, or none when it holds none. A node of another kind
// there is a mistake in the test.
func Pick[T any](impls map[string]any) func(node.Build) (T, hcl.Diagnostics) {
	return func(b node.Build) (T, hcl.Diagnostics) {
		impl, ok := impls[b.Address].(T)
		if !ok && impls[b.Address] != nil {
			panic(fmt.Sprintf("%s: the test's node is a %T", b.Address, impls[b.Address]))
		}
		return impl, nil
	}
}

// Compile parses src and compiles it over Registry(impls).
func Compile(t testing.TB, src string, impls map[string]any) (*graph.Graph, hcl.Diagnostics) {
	t.Helper()
	cfg, diags := schema.NewLoader().ParseSource("test.hcl", []byte(src), schema.Options{Environ: []string{}})
	if diags.HasErrors() {
		t.Fatalf("parse: %s", diags.Error())
	}
	return graph.Compile(cfg, Registry(impls))
}

// MustCompile is Compile that fails the test on an error.
func MustCompile(t testing.TB, src string, impls map[string]any) *graph.Graph {
	t.Helper()
	g, diags := Compile(t, src, impls)
	if diags.HasErrors() {
		t.Fatalf("compile: %s", diags.Error())
	}
	return g
}

// Str is cty.StringVal.
func Str(s string) cty.Value { return cty.StringVal(s) }

// Recs returns records of string values from key, value pairs.
func Recs(kv ...string) []node.Record {
	var out []node.Record
	for i := 0; i < len(kv); i += 2 {
		out = append(out, node.Record{Key: kv[i], Value: Str(kv[i+1])})
	}
	return out
}

// CtyEq compares cty values exactly (cty.Value.RawEquals).
func CtyEq() cmp.Option { return cmp.Comparer(func(a, b cty.Value) bool { return a.RawEquals(b) }) }
