package lsp

import (
	"strconv"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"go.lsp.dev/protocol"

	"github.com/pipeline/pipeline/schema"
)

func itoa(i int) string { return strconv.Itoa(i) }

// syntaxPath returns the blocks enclosing off in a parsed file, outermost
// first, as frames for blockAt.
func syntaxPath(body *hclsyntax.Body, off int) ([]*frame, *hclsyntax.Body, []*hclsyntax.Block) {
	var frames []*frame
	var blocks []*hclsyntax.Block
	for {
		var next *hclsyntax.Block
		for _, b := range body.Blocks {
			if within(b.Range(), off) {
				next = b
				break
			}
		}
		if next == nil {
			return frames, body, blocks
		}
		frames = append(frames, &frame{name: next.Type, labels: next.Labels})
		blocks = append(blocks, next)
		body = next.Body
	}
}

// hover describes what is under off: an attribute's type, default and
// doc; a reference's target; a function's signature; a node type.
func (s *Server) hover(w *workspace, f *parsed, off int) *protocol.Hover {
	frames, body, blocks := syntaxPath(f.body, off)
	md, rng := "", hcl.Range{}
	test := isTestFile(f.name)
	var testFile *schema.Block
	if test {
		testFile = &s.opts.TestFile
	}
	if target, r, ok := stepLabelAt(f, off); ok {
		md, rng = "`"+target+"` is not declared", r
		if d := w.decls[target]; d != nil {
			md = blockText(d)
		}
	}
	if len(blocks) > 0 && !test {
		top := blocks[0]
		if isNodeKind(top.Type) && len(top.Labels) == 2 && within(top.LabelRanges[0], off) {
			if sp, ok := s.opts.Registry.Lookup(schema.Kind(top.Type), top.Labels[0]); ok {
				md, rng = "**"+top.Type+" "+sp.Type+"**: "+sp.Summary+"\n\n"+sp.Doc, top.LabelRanges[0]
			}
		}
	}
	for _, a := range body.Attributes {
		switch {
		case md != "":
		case within(a.NameRange, off):
			if sb, _, ok := blockAt(s.opts.Registry, testFile, frames); ok {
				if info := attrInfo(sb, a.Name); info != nil {
					md, rng = attrMarkdown(info), a.NameRange
				}
			}
		case within(a.Expr.Range(), off) && !test:
			md, rng = s.hoverExpr(w, f, a.Expr, off)
		}
	}
	if md == "" {
		return nil
	}
	r := f.text.rangeOf(rng)
	return &protocol.Hover{Contents: protocol.MarkupContent{Kind: protocol.Markdown, Value: md}, Range: &r}
}

// hoverExpr describes a reference's target or a function under off.
func (s *Server) hoverExpr(w *workspace, f *parsed, e hclsyntax.Expression, off int) (md string, rng hcl.Range) {
	if r, ok := refAt(f, off); ok {
		if d := w.decls[r.target]; d != nil {
			return blockText(d), r.rng
		}
		return "`" + r.target + "` is not declared", r.rng
	}
	hclsyntax.VisitAll(e, func(n hclsyntax.Node) hcl.Diagnostics {
		if call, ok := n.(*hclsyntax.FunctionCallExpr); ok && within(call.NameRange, off) {
			if fn, ok := s.funcs[call.Name]; ok {
				md = "```\n" + signature(call.Name, fn) + "\n```\n" + fn.Description()
				rng = call.NameRange
			}
		}
		return nil
	})
	return md, rng
}
