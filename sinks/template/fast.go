package template

import (
	"bytes"
	"strconv"
	"strings"

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
type writer func(buf *bytes.Buffer, ctx *hcl.EvalContext, env *fastEnv) bool

// fastEnv is what a render reads besides ctx: the records, and for each
// loop over them the index of its current record (slot).
type fastEnv struct {
	recs []*record
	slot []int
	// limit is max_size; over is set when the render grew past it, or
	// past its budget, which stops it at once (not a reason to ask HCL).
	limit  int64
	over   bool
	budget *renderBudget
}

// pass charges one pass of a loop to the render's budget, and reports
// whether that spent it.
func (env *fastEnv) pass() bool {
	if env.budget.charge(passCost) != nil {
		env.over = true
	}
	return env.over
}

// full reports whether buf grew past the render's limit, and says so in
// env.
func (env *fastEnv) full(buf *bytes.Buffer) bool {
	if int64(buf.Len()) > env.limit {
		env.over = true
	}
	return env.over
}

// cell is the text of one record path of one record; ok false when the
// fast path cannot say it (HCL renders the template then).
type cell struct {
	text string
	ok   bool
}

// compileFast returns the template's fast path, or nil when its shape
// has none.
func compileFast(expr hcl.Expression, ctx *hcl.EvalContext) (w writer, slots int, paths [][]string) {
	c := &fastCompiler{ctx: ctx, recVars: map[string]int{}, pathIdx: map[string]int{}}
	if w = c.compile(expr); w == nil {
		return nil, 0, nil
	}
	return w, c.slots, c.paths
}

// fastCompiler compiles one template. recVars maps the variable of each
// enclosing loop over records to its slot in fastEnv.
type fastCompiler struct {
	ctx     *hcl.EvalContext
	recVars map[string]int
	slots   int
	paths   [][]string     // the record paths read (r.value.a.b: [a b])
	pathIdx map[string]int // a path's index in paths
}

func (c *fastCompiler) compile(expr hcl.Expression) writer {
	switch e := expr.(type) {
	case *hclsyntax.TemplateExpr:
		parts := make([]writer, len(e.Parts))
		for i, p := range e.Parts {
			if parts[i] = c.part(p); parts[i] == nil {
				return nil
			}
		}
		return func(buf *bytes.Buffer, ctx *hcl.EvalContext, env *fastEnv) bool {
			for _, p := range parts {
				if !p(buf, ctx, env) {
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
func (c *fastCompiler) part(expr hcl.Expression) writer {
	switch e := expr.(type) {
	case *hclsyntax.LiteralValueExpr:
		if e.Val.Type() != cty.String || e.Val.IsNull() || e.Val.IsMarked() {
			return nil
		}
		text := e.Val.AsString()
		return func(buf *bytes.Buffer, _ *hcl.EvalContext, _ *fastEnv) bool { buf.WriteString(text); return true }
	case *hclsyntax.TemplateExpr, *hclsyntax.TemplateWrapExpr, *hclsyntax.TemplateJoinExpr:
		return c.compile(e)
	case *hclsyntax.ConditionalExpr:
		return c.conditional(e)
	case *hclsyntax.ScopeTraversalExpr:
		if w := c.recordTraversal(e.Traversal); w != nil {
			return w
		}
	}
	x := fastexpr.Compile(expr, c.ctx)
	if !x.Fast() {
		return nil
	}
	return func(buf *bytes.Buffer, ctx *hcl.EvalContext, _ *fastEnv) bool {
		v, diags := x.Value(ctx)
		return !diags.HasErrors() && writeValue(buf, v)
	}
}

// conditional is %{ if c }...%{ else }...%{ endif }.
func (c *fastCompiler) conditional(e *hclsyntax.ConditionalExpr) writer {
	cond := fastexpr.Compile(e.Condition, c.ctx)
	yes, no := c.compile(e.TrueResult), c.compile(e.FalseResult)
	if !cond.Fast() || yes == nil || no == nil {
		return nil
	}
	return func(buf *bytes.Buffer, ctx *hcl.EvalContext, env *fastEnv) bool {
		v, diags := cond.Value(ctx)
		if diags.HasErrors() || v.Type() != cty.Bool || !v.IsKnown() || v.IsNull() || v.IsMarked() {
			return false
		}
		if v.True() {
			return yes(buf, ctx, env)
		}
		return no(buf, ctx, env)
	}
}

// forLoop is %{ for k, v in coll }...%{ endfor }.
func (c *fastCompiler) forLoop(e *hclsyntax.TemplateJoinExpr) writer {
	f, ok := e.Tuple.(*hclsyntax.ForExpr)
	if !ok || f.KeyExpr != nil || f.CondExpr != nil || f.Group {
		return nil
	}
	if tr, ok := f.CollExpr.(*hclsyntax.ScopeTraversalExpr); ok && len(tr.Traversal) == 1 && tr.Traversal.RootName() == "records" && f.KeyVar == "" {
		return c.recordsLoop(f)
	}
	coll := fastexpr.Compile(f.CollExpr, c.ctx)
	shadowed := c.hide(f.KeyVar, f.ValVar)
	body := c.compile(f.ValExpr)
	c.unhide(shadowed)
	if !coll.Fast() || body == nil {
		return nil
	}
	return func(buf *bytes.Buffer, ctx *hcl.EvalContext, env *fastEnv) bool {
		v, diags := coll.Value(ctx)
		if diags.HasErrors() || !v.IsKnown() || v.IsNull() || v.IsMarked() || !v.CanIterateElements() {
			return false
		}
		vars := map[string]cty.Value{}
		child := ctx.NewChild()
		child.Variables = vars
		for it := v.ElementIterator(); it.Next(); {
			if env.pass() {
				return false
			}
			k, el := it.Element()
			if f.KeyVar != "" {
				vars[f.KeyVar] = k
			}
			vars[f.ValVar] = el
			if !body(buf, child, env) || env.full(buf) {
				return false
			}
		}
		return true
	}
}

// recordsLoop is %{ for r in records }: it walks the records in Go, and
// r.key and r.value.NAME inside read them without HCL (recordTraversal).
func (c *fastCompiler) recordsLoop(f *hclsyntax.ForExpr) writer {
	slot := c.slots
	c.slots++
	prev, had := c.recVars[f.ValVar]
	c.recVars[f.ValVar] = slot
	body := c.compile(f.ValExpr)
	if had {
		c.recVars[f.ValVar] = prev
	} else {
		delete(c.recVars, f.ValVar)
	}
	if body == nil {
		return nil
	}
	return func(buf *bytes.Buffer, ctx *hcl.EvalContext, env *fastEnv) bool {
		vars := map[string]cty.Value{}
		child := ctx.NewChild()
		child.Variables = vars
		for i := range env.recs {
			if env.pass() {
				return false
			}
			env.slot[slot] = i
			vars[f.ValVar] = env.recs[i].obj
			if !body(buf, child, env) || env.full(buf) {
				return false
			}
		}
		return true
	}
}

// hide removes loop variables of an inner loop from recVars, which they
// shadow there; unhide puts them back.
func (c *fastCompiler) hide(names ...string) map[string]int {
	out := map[string]int{}
	for _, n := range names {
		if s, ok := c.recVars[n]; ok && n != "" {
			out[n] = s
			delete(c.recVars, n)
		}
	}
	return out
}

func (c *fastCompiler) unhide(m map[string]int) {
	for n, s := range m {
		c.recVars[n] = s
	}
}

// recordTraversal compiles r.key and r.value.a.b (attributes or string
// indexes) of a record loop's variable r; nil for any other traversal.
func (c *fastCompiler) recordTraversal(tr hcl.Traversal) writer {
	slot, ok := c.recVars[tr.RootName()]
	if !ok || len(tr) < 2 {
		return nil
	}
	first, ok := tr[1].(hcl.TraverseAttr)
	if !ok {
		return nil
	}
	if first.Name == "key" && len(tr) == 2 {
		return func(buf *bytes.Buffer, _ *hcl.EvalContext, env *fastEnv) bool {
			buf.WriteString(env.recs[env.slot[slot]].key)
			return true
		}
	}
	if first.Name != "value" {
		return nil
	}
	var path []string
	for _, step := range tr[2:] {
		switch st := step.(type) {
		case hcl.TraverseAttr:
			path = append(path, st.Name)
		case hcl.TraverseIndex:
			if st.Key.Type() != cty.String || st.Key.IsNull() || !st.Key.IsKnown() || st.Key.IsMarked() {
				return nil
			}
			path = append(path, st.Key.AsString())
		default:
			return nil
		}
	}
	key := strings.Join(path, "\x00")
	idx, ok := c.pathIdx[key]
	if !ok {
		idx = len(c.paths)
		c.pathIdx[key] = idx
		c.paths = append(c.paths, path)
	}
	return func(buf *bytes.Buffer, _ *hcl.EvalContext, env *fastEnv) bool {
		cl := env.recs[env.slot[slot]].cells[idx]
		buf.WriteString(cl.text)
		return cl.ok
	}
}

// walkPath reads attributes (or map keys) path of v; false when one is
// missing or v holds anything the fast path leaves to HCL on the way.
func walkPath(v cty.Value, path []string) (cty.Value, bool) {
	for _, name := range path {
		if v == cty.NilVal || !v.IsKnown() || v.IsNull() || v.IsMarked() {
			return cty.NilVal, false
		}
		switch ty := v.Type(); {
		case ty.IsObjectType() && ty.HasAttribute(name):
			v = v.GetAttr(name)
		case ty.IsMapType() && v.HasIndex(cty.StringVal(name)).True():
			v = v.Index(cty.StringVal(name))
		default:
			return cty.NilVal, false
		}
	}
	return v, true
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
