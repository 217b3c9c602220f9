package static

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// build loads a configuration with a sensitive variable s and builds its
// one static source.
func build(t *testing.T, records string) (*Source, hcl.Diagnostics) {
	t.Helper()
	src := "variable \"s\" {\n  sensitive = true\n}\nsource \"static\" \"x\" {\n  records = " + records + "\n}\n"
	cfg, diags := schema.NewLoader().ParseSource(t.TempDir()+"/p.hcl", []byte(src), schema.Options{Vars: []string{"s=Q"}, Environ: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	nb := cfg.Nodes[0]
	content, diags := schema.Decode(nb.Body, Spec().FullBody(), cfg.Ctx, nb.DeclRange)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	n, diags := Spec().NewSource(node.Build{Address: nb.Address(), Name: nb.Name, Content: content, Config: cfg})
	s, _ := n.(*Source)
	return s, diags
}

// TestSensitiveRecords checks that record values keep the sensitive mark
// for the views, and that a key computed from a secret is refused.
func TestSensitiveRecords(t *testing.T) {
	s, diags := build(t, `{ a = { v = upper(var.s) }, b = { v = "plain" } }`)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	got := map[string]bool{}
	for _, r := range s.Records() {
		got[r.Key] = schema.IsSensitive(r.Value)
	}
	if !got["a"] || got["b"] {
		t.Errorf("sensitive by key: %v, want a only", got)
	}
	_, diags = build(t, `{ (var.s) = {} }`)
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "Sensitive record key") || strings.Contains(diags.Error(), "Q") {
		t.Errorf("a sensitive key gave %v", diags)
	}
}
