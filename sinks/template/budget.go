package template

import (
	"errors"
	"reflect"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// A render's text is bounded by max_size as it grows; what HCL builds on
// the way is bounded by the render's budget. Inside one ${...} HCL builds
// whole values before anything is written: a for expression builds a
// tuple of every element, a function its whole result. So every value HCL
// builds in a render is charged to one budget, twice max_size, before or
// as it is built:
//
//   - a for expression is charged elementCost per element of the
//     collection it iterates, before it iterates, and each element's size
//     once built; a splat ([*]) is charged per element of its source;
//   - a function's result is charged once built; a function whose result
//     can be far larger than its arguments (join's separator repeated per
//     element, format's verbs repeating an argument, replace, split into
//     elements, jsondecode, jsonencode) is first charged an upper bound
//     of its result computed from its arguments, and not called when that
//     does not fit;
//   - each pass of a %{ for } directive is charged passCost, whether it
//     writes or not: two nested directives over a long list write little
//     but would run for minutes.
//
// A render over its budget is refused like one over max_size. Every
// charge after the first refusal fails at once, so a render that went
// over stops promptly even through try().

// elementCost is what one element of a collection is charged: about what
// a cty value and its place in a tuple take.
const elementCost = 128

// passCost is what one pass of a %{ for } directive is charged: its
// text is bounded by max_size already, its time is not.
const passCost = 16

// budgetVar is the variable a render's EvalContext holds its budget in
// (a capsule): not an identifier, so a template cannot read it.
const budgetVar = "\x00budget"

var budgetType = cty.Capsule("render budget", reflect.TypeOf(renderBudget{}))

// budgetOf is the budget of the render ctx belongs to; nil outside one.
func budgetOf(ctx *hcl.EvalContext) *renderBudget {
	for c := ctx; c != nil; c = c.Parent() {
		if v, ok := c.Variables[budgetVar]; ok {
			return v.EncapsulatedValue().(*renderBudget)
		}
	}
	return nil
}

// errOverBudget is a render that built more than its budget.
var errOverBudget = errors.New("the render builds values larger than its budget")

// renderBudget is one render's budget: the bytes it may still build
// (left), the bytes charged so far (used), and the most that any charge
// or check so far needed charged in all (peak: used before it, plus its
// size), which tells what a pass kept for reuse needs (cache.go).
type renderBudget struct {
	left, used, peak int64
	over             bool
}

// charge takes n bytes from b, or fails (then and ever after).
func (b *renderBudget) charge(n int64) error {
	if b.over {
		return errOverBudget
	}
	b.peak = max(b.peak, b.used+n)
	b.used += n
	if b.left -= n; b.left < 0 {
		b.over = true
		return errOverBudget
	}
	return nil
}

// fits reports whether n bytes fit in b, charging nothing; a size that
// does not fit spends the budget.
func (b *renderBudget) fits(n int64) error {
	if !b.over {
		b.peak = max(b.peak, b.used+n)
	}
	if !b.over && n > b.left {
		b.over = true
	}
	if b.over {
		return errOverBudget
	}
	return nil
}

// replay charges what a kept evaluation charged (cost), failing where
// it would have failed (less than need left).
func (b *renderBudget) replay(cost, need int64) error {
	if err := b.fits(need); err != nil {
		return err
	}
	return b.charge(cost)
}

// measure runs eval, and says what it charged b (cost) and the least
// budget left before it with which none of its charges fails (need).
func (b *renderBudget) measure(eval func() bool) (ok bool, cost, need int64) {
	used, peak := b.used, b.peak
	b.peak = used
	ok = eval()
	cost, need = b.used-used, b.peak-used
	b.peak = max(peak, b.peak)
	return ok, cost, need
}

// sizeOf is v's size for the budget: its string bytes (and object keys)
// plus elementCost per value, counted up to limit (it stops past it).
func sizeOf(v cty.Value, limit int64) int64 {
	var n int64
	var walk func(v cty.Value)
	walk = func(v cty.Value) {
		n += elementCost
		if n > limit || !v.IsKnown() || v.IsNull() {
			return
		}
		v, _ = v.Unmark()
		ty := v.Type()
		switch {
		case ty == cty.String:
			n += int64(len(v.AsString()))
		case ty.IsCollectionType() || ty.IsTupleType() || ty.IsObjectType():
			for it := v.ElementIterator(); it.Next() && n <= limit; {
				k, e := it.Element()
				if ty.IsMapType() || ty.IsObjectType() {
					n += int64(len(k.AsString()))
				}
				walk(e)
			}
		}
	}
	walk(v)
	return n
}

// budgetFuncs are ctx's functions, each charging its result to b (after
// checking the upper bound of the ones in estimates first).
func budgetFuncs(ctx *hcl.EvalContext, b *renderBudget) map[string]function.Function {
	out := map[string]function.Function{}
	for c := ctx; c != nil; c = c.Parent() {
		for name, f := range c.Functions {
			if _, ok := out[name]; !ok && !passThrough[name] {
				out[name] = charged(f, estimates[name], b)
			}
		}
	}
	return out
}

// passThrough are the functions that return a value built elsewhere
// (their expression's), charged there: wrapping them would change how
// they take their argument.
var passThrough = map[string]bool{"try": true, "can": true}

// charged wraps f: estimate, if any, bounds its result before it runs;
// its result is charged once built.
func charged(f function.Function, estimate func(args []cty.Value, limit int64) int64, b *renderBudget) function.Function {
	return function.New(&function.Spec{
		Description: f.Description(),
		Params:      f.Params(),
		VarParam:    f.VarParam(),
		Type:        f.ReturnTypeForValues,
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if b.over {
				return cty.NilVal, errOverBudget
			}
			if estimate != nil {
				plain := make([]cty.Value, len(args))
				for i, a := range args {
					plain[i], _ = a.UnmarkDeep()
				}
				if err := b.fits(estimate(plain, b.left+1)); err != nil {
					return cty.NilVal, err
				}
			}
			v, err := f.Call(args)
			if err != nil {
				return v, err
			}
			return v, b.charge(sizeOf(v, b.left+1))
		},
	})
}

// estimates bound, from their (known, unmarked) arguments, the results of
// the functions whose result can be much larger than their arguments,
// counted up to limit. Every other function's result is at most a small
// multiple of its arguments and is charged once built
// (TestEveryFunctionBudgeted holds the list whole).
var estimates = map[string]func(args []cty.Value, limit int64) int64{
	"join":       joinSize,
	"format":     formatSize,
	"formatlist": formatListSize,
	"replace":    replaceSize,
	"split":      splitSize,
	"jsondecode": func(args []cty.Value, _ int64) int64 { return int64(len(str(args, 0)))/2*elementCost + elementCost },
	"jsonencode": func(args []cty.Value, limit int64) int64 { return 6 * sizeOf(args[0], limit) },
}

// linear are the functions whose result is charged once built.
var linear = []string{"env", "file", "lower", "upper", "trimspace", "regex", "substr", "length", "concat",
	"merge", "keys", "values", "lookup", "contains", "coalesce", "distinct", "flatten", "tostring", "tonumber", "tobool",
	"sort", "min", "max", "cidrsubnet", "cidrhost"}

// str is args[i] as a string, "" when it is not a known one.
func str(args []cty.Value, i int) string {
	if i >= len(args) || args[i].IsNull() || !args[i].IsKnown() || args[i].Type() != cty.String {
		return ""
	}
	return args[i].AsString()
}

// joinSize: the elements' text plus the separator between each two.
func joinSize(args []cty.Value, limit int64) int64 {
	sep := int64(len(str(args, 0)))
	n := int64(elementCost)
	for _, l := range args[1:] {
		if !l.IsKnown() || l.IsNull() || !l.CanIterateElements() {
			continue
		}
		for it := l.ElementIterator(); it.Next() && n <= limit; {
			_, e := it.Element()
			n += sizeOf(e, limit) + sep
		}
	}
	return n
}

// formatSize: the format's text, and for each of its verbs the largest
// argument and the verbs' widths.
func formatSize(args []cty.Value, limit int64) int64 {
	f := str(args, 0)
	var arg int64
	for _, a := range args[1:] {
		arg = max(arg, sizeOf(a, limit))
	}
	return int64(len(f)) + int64(strings.Count(f, "%"))*arg + verbWidths(f)
}

// formatListSize: formatSize of the largest element of each argument,
// once per element of the longest list.
func formatListSize(args []cty.Value, limit int64) int64 {
	f := str(args, 0)
	rows, arg := int64(1), int64(0)
	for _, a := range args[1:] {
		if a.IsKnown() && !a.IsNull() && (a.Type().IsListType() || a.Type().IsTupleType()) {
			rows = max(rows, int64(a.LengthInt()))
			for it := a.ElementIterator(); it.Next() && arg <= limit; {
				_, e := it.Element()
				arg = max(arg, sizeOf(e, limit))
			}
			continue
		}
		arg = max(arg, sizeOf(a, limit))
	}
	return rows * (elementCost + int64(len(f)) + int64(strings.Count(f, "%"))*arg + verbWidths(f))
}

// verbWidths is the sum of the widths and precisions a format's verbs
// give (each at most maxFormatWidth).
func verbWidths(f string) int64 {
	var n int64
	for _, m := range formatVerb.FindAllStringSubmatch(f, -1) {
		for _, d := range m[1:] {
			w := 0
			for _, c := range d {
				w = w*10 + int(c-'0')
				if w > maxFormatWidth {
					w = maxFormatWidth
					break
				}
			}
			n += int64(w)
		}
	}
	return n
}

// replaceSize: each match replaced, a /regular expression/'s match being
// as short as nothing and each $ in the replacement as long as the text.
func replaceSize(args []cty.Value, _ int64) int64 {
	s, sub, rep := str(args, 0), str(args, 1), str(args, 2)
	if len(sub) > 1 && strings.HasPrefix(sub, "/") && strings.HasSuffix(sub, "/") {
		per := int64(len(rep)) + int64(strings.Count(rep, "$"))*int64(len(s))
		return int64(len(s)) + int64(len(s)+1)*per + elementCost
	}
	matches := int64(strings.Count(s, sub)) // runes + 1 for an empty sub
	return int64(len(s)) + matches*int64(len(rep)) + elementCost
}

// splitSize: the text, and an element per piece.
func splitSize(args []cty.Value, _ int64) int64 {
	sep, s := str(args, 0), str(args, 1)
	return int64(len(s)) + int64(strings.Count(s, sep)+1)*elementCost
}

// loopCharge evaluates a for's collection (element false) or element
// (element true), or a splat's source, and charges it to the render's
// budget. It stands in the tree for the expression it evaluates as a
// call of a function no template can name: walkers see a function call
// and, through it, the expression as written.
type loopCharge struct {
	*hclsyntax.FunctionCallExpr
	element bool
}

// Value is the expression's value, charged; once the render is over its
// budget it evaluates nothing.
func (l *loopCharge) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	b := budgetOf(ctx)
	if b != nil && b.over {
		return cty.DynamicVal, l.overDiag()
	}
	v, diags := l.Args[0].Value(ctx)
	if b == nil || diags.HasErrors() {
		return v, diags
	}
	plain, _ := v.Unmark()
	var err error
	switch {
	case l.element:
		err = b.charge(sizeOf(plain, b.left+1))
	case plain.IsKnown() && !plain.IsNull() && plain.CanIterateElements():
		err = b.charge(int64(plain.LengthInt()) * elementCost)
	}
	if err != nil {
		return cty.DynamicVal, append(diags, l.overDiag()...)
	}
	return v, diags
}

func (l *loopCharge) overDiag() hcl.Diagnostics {
	return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Render too large", Detail: errOverBudget.Error() + ".", Subject: l.Range().Ptr()}}
}

// wrapLoops rewrites expr so that HCL's evaluation of it charges the
// render's budget for its loops (loopCharge): each for's collection,
// element and key, and each splat's source. A tree rewritten already is
// left as it is.
func wrapLoops(expr hcl.Expression) {
	syn, ok := expr.(hclsyntax.Node)
	if !ok {
		return
	}
	wrap := func(e hclsyntax.Expression, element bool) hclsyntax.Expression {
		if _, ok := e.(*loopCharge); ok || e == nil {
			return e
		}
		r := e.Range()
		return &loopCharge{element: element, FunctionCallExpr: &hclsyntax.FunctionCallExpr{Name: "\x00charge",
			Args: []hclsyntax.Expression{e}, NameRange: r, OpenParenRange: r, CloseParenRange: r}}
	}
	_ = hclsyntax.VisitAll(syn, func(n hclsyntax.Node) hcl.Diagnostics {
		switch e := n.(type) {
		case *hclsyntax.ForExpr:
			e.CollExpr = wrap(e.CollExpr, false)
			e.ValExpr = wrap(e.ValExpr, true)
			e.KeyExpr = wrap(e.KeyExpr, true)
		case *hclsyntax.SplatExpr:
			e.Source = wrap(e.Source, false)
		}
		return nil
	})
}

// unwrapped is a for's collection or element as written: the template's
// own %{ for } directives write straight into the bounded text, and are
// charged per pass (passCost) instead.
func unwrapped(e hclsyntax.Expression) hclsyntax.Expression {
	if l, ok := e.(*loopCharge); ok {
		return l.Args[0]
	}
	return e
}
