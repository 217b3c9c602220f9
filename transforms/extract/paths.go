package extract

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/kobject"
)

// ObjectPaths implements node.ObjectReader: the paths of object that
// where, for_each, key and value read, jsonpath() templates included.
func (t *Transform) ObjectPaths() (*node.Paths, hcl.Diagnostics) {
	p := &node.Paths{}
	var whole []hcl.Range
	for _, e := range []hcl.Expression{t.where, t.forEach, t.key, t.value} {
		whole = append(whole, node.ExprPaths(p, "object", e, t.jsonPathReads)...)
	}
	return p, node.WholeObjectWarnings(whole)
}

// jsonPathReads claims jsonpath(object..., "literal template") calls: they
// read the template's paths below the traversal.
func (t *Transform) jsonPathReads(fc *hclsyntax.FunctionCallExpr) ([][]string, bool) {
	if fc.Name != "jsonpath" || len(fc.Args) != 2 {
		return nil, false
	}
	st, ok := fc.Args[0].(*hclsyntax.ScopeTraversalExpr)
	if !ok || st.Traversal.RootName() != "object" {
		return nil, false
	}
	base := node.TraversalPath(st.Traversal[1:])
	if len(base) != len(st.Traversal)-1 {
		return [][]string{base}, true // an index below the base: read it whole
	}
	tv, diags := fc.Args[1].Value(t.ctx) // variables and locals are known now
	if diags.HasErrors() || tv.Type() != cty.String || !tv.IsKnown() || tv.IsNull() {
		return nil, false
	}
	if tv.IsMarked() {
		// A template computed from a secret: read the base whole rather
		// than show the secret's paths in the graph.
		return [][]string{base}, true
	}
	prefixes, ok := kobject.ReadPrefixes(tv.AsString())
	if !ok {
		return [][]string{base}, true
	}
	out := make([][]string, 0, len(prefixes))
	for _, pre := range prefixes {
		out = append(out, append(append([]string(nil), base...), pre...))
	}
	return out, true
}

var _ node.ObjectReader = (*Transform)(nil)
