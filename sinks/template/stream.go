package template

import (
	"bytes"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// streamTemplate renders a template the fast path gave up on, through
// HCL, but one loop element at a time into one buffer, so a render that
// grows past limit stops there instead of HCL building all of it first
// (HCL evaluates a %{ for } into a tuple of every element's text, then
// joins them). Every expression inside (interpolations, conditions, the
// collections looped over) is evaluated by HCL, so the text is HCL's.
// ok is false when it met anything it leaves to HCL's own evaluation (an
// error, an unknown or null value, a shape it does not walk): the caller
// then evaluates the template with HCL, which gives the error. over says
// the render grew past limit.
func streamTemplate(expr hcl.Expression, ctx *hcl.EvalContext, limit int64) (data []byte, ok, over bool) {
	if _, wrap := expr.(*hclsyntax.TemplateWrapExpr); wrap {
		return nil, false, false // a lone ${x} is x itself, not text
	}
	st := &streamer{limit: limit, budget: budgetOf(ctx)}
	if !st.write(expr, ctx) {
		return nil, false, st.over
	}
	return st.buf.Bytes(), true, false
}

type streamer struct {
	buf    bytes.Buffer
	limit  int64
	over   bool
	budget *renderBudget // nil: none (outside a render)
}

func (st *streamer) full() bool {
	if int64(st.buf.Len()) > st.limit {
		st.over = true
	}
	return st.over
}

// write writes expr's text; false: give up (over says why, when it is
// the limit).
func (st *streamer) write(expr hcl.Expression, ctx *hcl.EvalContext) bool {
	switch e := expr.(type) {
	case *hclsyntax.TemplateExpr:
		for _, p := range e.Parts {
			if !st.write(p, ctx) {
				return false
			}
		}
		return true
	case *hclsyntax.TemplateJoinExpr:
		f, ok := e.Tuple.(*hclsyntax.ForExpr)
		if !ok || f.KeyExpr != nil || f.Group {
			return st.leaf(expr, ctx)
		}
		return st.loop(f, ctx)
	case *hclsyntax.ConditionalExpr:
		c, diags := e.Condition.Value(ctx)
		if diags.HasErrors() || !c.IsWhollyKnown() || c.IsNull() {
			return false
		}
		c, _ = c.UnmarkDeep()
		if c, err := convert.Convert(c, cty.Bool); err != nil || c.IsNull() {
			return false
		} else if c.True() {
			return st.write(e.TrueResult, ctx)
		}
		return st.write(e.FalseResult, ctx)
	}
	return st.leaf(expr, ctx)
}

// loop is %{ for k, v in coll }...%{ endfor }, with its if clause.
func (st *streamer) loop(f *hclsyntax.ForExpr, ctx *hcl.EvalContext) bool {
	coll, diags := unwrapped(f.CollExpr).Value(ctx)
	if diags.HasErrors() || !coll.IsWhollyKnown() || coll.IsNull() {
		return false
	}
	coll, _ = coll.UnmarkDeep()
	if !coll.CanIterateElements() {
		return false
	}
	child := ctx.NewChild()
	vars := map[string]cty.Value{}
	child.Variables = vars
	for it := coll.ElementIterator(); it.Next(); {
		if st.budget != nil && st.budget.charge(passCost) != nil {
			st.over = true
			return false
		}
		k, v := it.Element()
		if f.KeyVar != "" {
			vars[f.KeyVar] = k
		}
		vars[f.ValVar] = v
		if f.CondExpr != nil {
			c, diags := f.CondExpr.Value(child)
			if diags.HasErrors() || !c.IsWhollyKnown() || c.IsNull() {
				return false
			}
			c, _ = c.UnmarkDeep()
			if c.Type() != cty.Bool {
				return false
			}
			if c.False() {
				continue
			}
		}
		if !st.write(unwrapped(f.ValExpr), child) || st.full() {
			return false
		}
	}
	return true
}

// leaf writes an expression's value converted to text, as HCL's template
// does.
func (st *streamer) leaf(expr hcl.Expression, ctx *hcl.EvalContext) bool {
	v, diags := expr.Value(ctx)
	if diags.HasErrors() || !v.IsWhollyKnown() || v.IsNull() {
		return false
	}
	v, _ = v.UnmarkDeep()
	s, err := convert.Convert(v, cty.String)
	if err != nil || s.IsNull() {
		return false
	}
	st.buf.WriteString(s.AsString())
	return !st.full()
}
