package console

import (
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/internal/redact"
	"github.com/pipeline/pipeline/schema"
)

// maxBlockBytes bounds the text of one block the console keeps.
const maxBlockBytes = 16 << 10

// blockText returns n's block as written in its file, with the expression
// of every attribute its type declares Sensitive replaced by the mask and
// every known secret's text masked: a literal token in the configuration
// never reaches the page. "" when the file is not at hand.
func blockText(cfg *schema.Config, n *graph.Node, secrets *redact.Redactor) string {
	if cfg == nil || n.Block == nil {
		return ""
	}
	f := cfg.Files[n.Block.DeclRange.Filename]
	body, ok := n.Block.Body.(*hclsyntax.Body)
	if f == nil || !ok {
		return ""
	}
	start, end := n.Block.DeclRange.Start.Byte, body.SrcRange.End.Byte
	if start < 0 || end > len(f.Bytes) || start >= end {
		return ""
	}
	cut := sensitiveExprs(body, n.Spec.Body) // in the file's offsets
	sort.Slice(cut, func(i, j int) bool { return cut[i].Start.Byte < cut[j].Start.Byte })
	var out []byte
	at := start
	for _, r := range cut {
		if r.Start.Byte < at || r.End.Byte > end {
			continue
		}
		out = append(out, f.Bytes[at:r.Start.Byte]...)
		out = append(out, `"`+redact.Mask+`"`...)
		at = r.End.Byte
	}
	out = append(out, f.Bytes[at:end]...)
	if len(out) > maxBlockBytes {
		out = append(out[:maxBlockBytes], "\n…"...)
	}
	return secrets.String(string(out))
}

// sensitiveExprs returns the ranges of the expressions of body's attributes
// that decl declares Sensitive, in nested blocks too.
func sensitiveExprs(body *hclsyntax.Body, decl schema.Block) []hcl.Range {
	var out []hcl.Range
	for name, a := range body.Attributes {
		if at := decl.Attr(name); at != nil && at.Info().Sensitive {
			out = append(out, a.Expr.Range())
		}
	}
	for _, b := range body.Blocks {
		for _, bt := range decl.Blocks {
			if bt.Name == b.Type {
				out = append(out, sensitiveExprs(b.Body, bt.Body)...)
			}
		}
	}
	return out
}
