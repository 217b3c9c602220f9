package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// TestRuntimeRefusesPlannedTypes: a graph using a type registered as
// Planned compiles (it validates) but NewRuntime refuses it, naming the node
// and its position.
func TestRuntimeRefusesPlannedTypes(t *testing.T) {
	src := `
source "script" "in" {}
sink "later" "out" {
  input = source.script.in
}
`
	impls := map[string]any{"source.script.in": newScriptSource()}
	reg := node.NewRegistry(
		node.Spec{Kind: node.KindSource, Type: "script", Summary: "test", Output: node.Records,
			NewSource: pick[node.Source](impls)},
		node.Spec{Kind: node.KindSink, Type: "later", Summary: "test", Status: node.Planned,
			NewSink: func(b node.Build) (node.Sink, hcl.Diagnostics) { return node.PlannedSink{Address: b.Address}, nil }},
	)
	cfg, diags := schema.NewLoader().ParseSource("test.hcl", []byte(src), schema.Options{Environ: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	g, diags := Compile(cfg, reg)
	if diags.HasErrors() {
		t.Fatalf("a planned type must validate: %s", diags.Error())
	}
	_, err := NewRuntime(g, RunOptions{})
	if !errors.Is(err, node.ErrPlanned) || !strings.Contains(err.Error(), "sink.later.out (test.hcl:3") {
		t.Fatalf("NewRuntime: %v", err)
	}
}
