package main

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/pipeline/pipeline/cmd/pipeline/schemadoc"
)

// TestAttributeExamplesParse: every attribute's Example and Default, as
// docs/reference.md and editors show them, is an HCL expression a user can
// paste: it parses. It walks the registry and the top-level blocks.
func TestAttributeExamplesParse(t *testing.T) {
	d := schemadoc.Describe(registry())
	var walk func(where string, b schemadoc.Block)
	checked := 0
	walk = func(where string, b schemadoc.Block) {
		for _, a := range b.Attributes {
			for what, src := range map[string]string{"example": a.Example, "default": a.Default} {
				if src == "" {
					continue
				}
				checked++
				if _, diags := hclsyntax.ParseExpression([]byte(src), where+"."+a.Name, hcl.InitialPos); diags.HasErrors() {
					t.Errorf("%s.%s: the %s %s does not parse: %s", where, a.Name, what, src, diags.Error())
				}
			}
		}
		for _, nb := range b.Blocks {
			walk(where+"."+nb.Name, nb.Body)
		}
	}
	walk("cluster", d.Cluster)
	walk("leader_election", d.Leader)
	walk("test_file", d.TestFile)
	for _, ty := range d.Types {
		walk(ty.Kind+"."+ty.Type, ty.Body)
	}
	if checked < 50 {
		t.Fatalf("only %d examples and defaults checked", checked)
	}
}
