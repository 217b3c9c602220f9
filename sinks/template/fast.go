package template

import (
	"bytes"
	"strconv"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/internal/fastexpr"
)

// A template renders 10,000 backends about ten times faster written
// straight into a buffer than through HCL's evaluation, which builds a cty
// string per interpolation, a tuple per for and converts every number
// through big.Float. compileFast recognises the shapes templates are made
// of (literal text, interpolations, for over a collection, if/else) and
// evaluates the expressions inside them with fastexpr. HCL stays the
// definition of the result: wherever the fast path meets anything else (a
// marked, unknown or null value, a number that is not a small integer, a
// failing expression) it gives up, and the whole template is rendered by
// HCL, errors and all. TestFastMatchesHCL holds the two equal.

// writer renders a compiled template part into buf; false means "ask HCL".
type writer func(buf *bytes.Buffer, ctx *hcl.EvalContext) bool

// compileFast returns the template's fast path, or nil when its shape
// has none.
func compileFast(expr hcl.Expression, ctx *hcl.EvalContext) writer {
	return fastCompiler{ctx: ctx}.compile(expr)
}

type fastCompiler struct{ ctx *hcl.EvalContext }

func (c fastCompiler) compile(expr hcl.Expression) writer {
	switch e := expr.(type) {
	case *hclsyntax.TemplateExpr:
		parts := make([]writer, len(e.Parts))
		for i, p := range e.Parts {
			if parts[i] = c.part(p); parts[i] == nil {
				return nil
			}
		}
		return func(buf *bytes.Buffer, ctx *hcl.EvalContext) bool {
			for _, p := range parts {
				if !p(buf, ctx) {
					return false
				}
			}
			return true
		}
	case *hclsyntax.TemplateWrapExpr:
		return c.part(e.Wrapped)
	case *hclsyntax.TemplateJoinExpr:
		return c.forLoop(e)
	}
	return nil
}

// part is one part of a template: literal text, an interpolation, a
// directive.
func (c fastCompiler) part(expr hcl.Expression) writer {
	switch e := expr.(type) {
	case *hclsyntax.LiteralValueExpr:
		if e.Val.Type() != cty.String || e.Val.IsNull() || e.Val.IsMarked() {
			return nil
		}
		text := e.Val.AsString()
		return func(buf *bytes.Buffer, _ *hcl.EvalContext) bool { buf.WriteString(text); return true }
	case *hclsyntax.TemplateExpr, *hclsyntax.TemplateWrapExpr, *hclsyntax.TemplateJoinExpr:
		return c.compile(e)
	case *hclsyntax.ConditionalExpr:
		return c.conditional(e)
	}
	x := fastexpr.Compile(expr, c.ctx)
	if !x.Fast() {
		return nil
	}
	return func(buf *bytes.Buffer, ctx *hcl.EvalContext) bool {
		v, diags := x.Value(ctx)
		return !diags.HasErrors() && writeValue(buf, v)
	}
}

// conditional is %{ if c }...%{ else }...%{ endif }.
func (c fastCompiler) conditional(e *hclsyntax.ConditionalExpr) writer {
	cond := fastexpr.Compile(e.Condition, c.ctx)
	yes, no := c.compile(e.TrueResult), c.compile(e.FalseResult)
	if !cond.Fast() || yes == nil || no == nil {
		return nil
	}
	return func(buf *bytes.Buffer, ctx *hcl.EvalContext) bool {
		v, diags := cond.Value(ctx)
		if diags.HasErrors() || v.Type() != cty.Bool || !v.IsKnown() || v.IsNull() || v.IsMarked() {
			return false
		}
		if v.True() {
			return yes(buf, ctx)
		}
		return no(buf, ctx)
	}
}

// forLoop is %{ for k, v in coll }...%{ endfor }.
func (c fastCompiler) forLoop(e *hclsyntax.TemplateJoinExpr) writer {
	f, ok := e.Tuple.(*hclsyntax.ForExpr)
	if !ok || f.KeyExpr != nil || f.CondExpr != nil || f.Group {
		return nil
	}
	coll := fastexpr.Compile(f.CollExpr, c.ctx)
	body := c.compile(f.ValExpr)
	if !coll.Fast() || body == nil {
		return nil
	}
	return func(buf *bytes.Buffer, ctx *hcl.EvalContext) bool {
		v, diags := coll.Value(ctx)
		if diags.HasErrors() || !v.IsKnown() || v.IsNull() || v.IsMarked() || !v.CanIterateElements() {
			return false
		}
		vars := map[string]cty.Value{}
		child := ctx.NewChild()
		child.Variables = vars
		for it := v.ElementIterator(); it.Next(); {
			k, el := it.Element()
			if f.KeyVar != "" {
				vars[f.KeyVar] = k
			}
			vars[f.ValVar] = el
			if !body(buf, child) {
				return false
			}
		}
		return true
	}
}

// writeValue writes an interpolated value as HCL converts it to a
// string, or reports false for a value whose conversion it leaves to HCL.
func writeValue(buf *bytes.Buffer, v cty.Value) bool {
	if !v.IsKnown() || v.IsNull() || v.IsMarked() {
		return false
	}
	switch v.Type() {
	case cty.String:
		buf.WriteString(v.AsString())
		return true
	case cty.Bool:
		buf.WriteString(strconv.FormatBool(v.True()))
		return true
	case cty.Number:
		bf := v.AsBigFloat()
		if !bf.IsInt() {
			return false
		}
		i, acc := bf.Int64()
		if acc != 0 {
			return false
		}
		buf.Write(strconv.AppendInt(buf.AvailableBuffer(), i, 10))
		return true
	}
	return false
}
