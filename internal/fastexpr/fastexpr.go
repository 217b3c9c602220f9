// Package fastexpr evaluates the common shapes of per-record expressions
// without HCL's general machinery, and defers to HCL for everything else.
//
// A transform evaluates its expressions once per record: for the flagship
// `where = try(object.status.podIP, "") != ""` most of HCL's time goes to
// function-call plumbing (argument closures, parameter conversion,
// diagnostics), which was most of an initial sync's CPU after decoding
// (docs/performance.md). Compile recognises a small set of node shapes — literals,
// string templates, traversals of a variable (`object.a.b["c"][0]`),
// object and tuple constructors with literal keys, `try(...)`, `!`, `==`,
// `!=`, `&&`, `||` and parentheses — and evaluates them directly on cty
// values.
//
// HCL stays the definition of every result: the fast path only answers
// when its answer is the one HCL would give (known, unmarked values, no
// error on the way); anything else — an unknown or marked value, a missing
// attribute, a type that needs conversion — makes it give up, and the
// expression is evaluated by HCL, diagnostics and all. A differential test
// and a fuzz target hold the two equal. This package imports nothing of
// ours.
//
// A variable may also be bound to Fields (FieldsVal): a value that answers
// attribute paths without being built, such as a source's packed record.
// Only FastValue reads it; where it cannot answer, the caller builds the
// value, binds it, and asks Value.
package fastexpr

import (
	"reflect"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// eval is a compiled node: ok false means "ask HCL".
type eval func(ctx *hcl.EvalContext) (v cty.Value, ok bool)

// Expr is an expression with its fast path, if it has one. The zero value
// is not usable; a nil *Expr is not either.
type Expr struct {
	hcl.Expression
	fast eval // nil: always HCL
}

// Compile returns expr with a fast path when its shape allows one. ctx is
// the context the expression will be evaluated in (or a parent of it): it
// tells whether `try` is HCL's try. A nil expr gives nil.
func Compile(expr hcl.Expression, ctx *hcl.EvalContext) *Expr {
	if expr == nil {
		return nil
	}
	c := compiler{hasTry: hasTry(ctx)}
	return &Expr{Expression: expr, fast: c.compile(expr)}
}

// Fast reports whether the expression has a fast path (for tests and
// for `pipeline graph`-style explanations).
func (e *Expr) Fast() bool { return e.fast != nil }

// Value evaluates the expression: the fast path when it answers, HCL
// otherwise. The result is the one HCL's Value gives.
func (e *Expr) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	if e.fast != nil {
		if v, ok := e.fast(ctx); ok {
			return v, nil
		}
	}
	return e.Expression.Value(ctx)
}

// FastValue evaluates the fast path alone: ok false when it cannot
// answer. It is the only evaluation that may meet a variable bound to
// Fields; where it gives up, Value gives the answer once every variable
// holds its built value.
func (e *Expr) FastValue(ctx *hcl.EvalContext) (cty.Value, bool) {
	if e.fast == nil {
		return cty.NilVal, false
	}
	return e.fast(ctx)
}

// Fields is a value that answers attribute paths without being built as
// a cty value. Field returns the value at path (attribute names from the
// root, at least one) exactly as the built value has it, or ok false when
// it cannot say, an absent attribute included.
type Fields interface {
	Field(path []string) (cty.Value, bool)
}

// fieldsType is the capsule type of FieldsVal.
var fieldsType = cty.Capsule("fields", reflect.TypeFor[Fields]())

// FieldsVal returns a variable value that the fast path reads through f's
// Field; HCL cannot read it, so only FastValue may see it bound.
func FieldsVal(f Fields) cty.Value { return cty.CapsuleVal(fieldsType, &f) }

// boundFields reports whether a variable visible from ctx is bound to
// Fields: HCL must not be asked then.
func boundFields(ctx *hcl.EvalContext) bool {
	for c := ctx; c != nil; c = c.Parent() {
		for _, v := range c.Variables {
			if v.Type() == fieldsType {
				return true
			}
		}
	}
	return false
}

func hasTry(ctx *hcl.EvalContext) bool {
	for c := ctx; c != nil; c = c.Parent() {
		if c.Functions == nil {
			continue
		}
		if f, ok := c.Functions["try"]; ok {
			return f == tryfunc.TryFunc
		}
	}
	return false
}

type compiler struct{ hasTry bool }

// compile returns nil when expr's shape has no fast path.
func (c compiler) compile(expr hcl.Expression) eval {
	switch e := expr.(type) {
	case *hclsyntax.LiteralValueExpr:
		return constant(e.Val)
	case *hclsyntax.TemplateExpr:
		return c.template(e)
	case *hclsyntax.TemplateWrapExpr:
		return c.compile(e.Wrapped)
	case *hclsyntax.ParenthesesExpr:
		return c.compile(e.Expression)
	case *hclsyntax.ScopeTraversalExpr:
		return traversal(e.Traversal)
	case *hclsyntax.FunctionCallExpr:
		if e.Name != "try" || !c.hasTry || e.ExpandFinal || len(e.Args) == 0 {
			return nil
		}
		return c.try(e.Args)
	case *hclsyntax.UnaryOpExpr:
		if e.Op != hclsyntax.OpLogicalNot {
			return nil
		}
		x := c.compile(e.Val)
		if x == nil {
			return nil
		}
		return func(ctx *hcl.EvalContext) (cty.Value, bool) {
			v, ok := x(ctx)
			if !ok || !isBool(v) {
				return cty.NilVal, false
			}
			return v.Not(), true
		}
	case *hclsyntax.BinaryOpExpr:
		return c.binary(e)
	case *hclsyntax.ObjectConsExpr:
		return c.object(e)
	case *hclsyntax.TupleConsExpr:
		elems := make([]eval, len(e.Exprs))
		for i, x := range e.Exprs {
			if elems[i] = c.compile(x); elems[i] == nil {
				return nil
			}
		}
		return func(ctx *hcl.EvalContext) (cty.Value, bool) {
			vals := make([]cty.Value, len(elems))
			for i, el := range elems {
				v, ok := el(ctx)
				if !ok {
					return cty.NilVal, false
				}
				vals[i] = v
			}
			return cty.TupleVal(vals), true
		}
	}
	return nil
}

// object builds { name = expr, "name" = expr } when every key is known
// now: a bare word or a literal string (the last of duplicates wins, as
// in HCL).
func (c compiler) object(e *hclsyntax.ObjectConsExpr) eval {
	keys := make([]string, len(e.Items))
	vals := make([]eval, len(e.Items))
	for i, it := range e.Items {
		k, ok := it.KeyExpr.(*hclsyntax.ObjectConsKeyExpr)
		if !ok {
			return nil
		}
		if w := hcl.ExprAsKeyword(k.Wrapped); w != "" && !k.ForceNonLiteral {
			keys[i] = w
		} else if t, ok := k.Wrapped.(*hclsyntax.TemplateExpr); ok && t.IsStringLiteral() {
			v, diags := t.Value(nil)
			if diags.HasErrors() || v.IsNull() || v.Type() != cty.String {
				return nil
			}
			keys[i] = v.AsString()
		} else {
			return nil
		}
		if vals[i] = c.compile(it.ValueExpr); vals[i] == nil {
			return nil
		}
	}
	return func(ctx *hcl.EvalContext) (cty.Value, bool) {
		attrs := make(map[string]cty.Value, len(keys))
		for i, k := range keys {
			v, ok := vals[i](ctx)
			if !ok {
				return cty.NilVal, false
			}
			attrs[k] = v
		}
		return cty.ObjectVal(attrs), true
	}
}

// template joins literal parts and parts that are strings; any other part
// (a number or bool HCL would convert, a null it would reject) gives up.
func (c compiler) template(e *hclsyntax.TemplateExpr) eval {
	parts := make([]eval, len(e.Parts))
	literal := true
	for i, p := range e.Parts {
		if _, ok := p.(*hclsyntax.LiteralValueExpr); !ok {
			literal = false
		}
		if parts[i] = c.compile(p); parts[i] == nil {
			return nil
		}
	}
	if literal {
		v, diags := e.Value(nil)
		if diags.HasErrors() {
			return nil
		}
		return constant(v)
	}
	return func(ctx *hcl.EvalContext) (cty.Value, bool) {
		var b strings.Builder
		for _, p := range parts {
			v, ok := p(ctx)
			if !ok || v.IsMarked() || !v.IsKnown() || v.Type() != cty.String || v.IsNull() {
				return cty.NilVal, false // a marked or unknown part: HCL builds the result
			}
			b.WriteString(v.AsString())
		}
		return cty.StringVal(b.String()), true
	}
}

func constant(v cty.Value) eval {
	if v.IsMarked() || !v.IsWhollyKnown() {
		return nil
	}
	return func(*hcl.EvalContext) (cty.Value, bool) { return v, true }
}

// try is HCL's try: the first argument that evaluates without an error to
// a wholly known value. An argument the fast path cannot answer is
// evaluated by HCL, whose error moves on to the next argument as try does.
func (c compiler) try(args []hclsyntax.Expression) eval {
	fast := make([]eval, len(args))
	some := false
	for i, a := range args {
		fast[i] = c.compile(a)
		some = some || fast[i] != nil
	}
	if !some {
		return nil
	}
	return func(ctx *hcl.EvalContext) (cty.Value, bool) {
		for i, a := range args {
			if fast[i] != nil {
				if v, ok := fast[i](ctx); ok && !v.IsMarked() && v.IsWhollyKnown() {
					return v, true
				}
			}
			if boundFields(ctx) {
				return cty.NilVal, false // HCL cannot read Fields: the caller builds the value
			}
			v, diags := a.Value(ctx)
			if diags.HasErrors() {
				continue
			}
			if v.IsMarked() || !v.IsWhollyKnown() {
				return cty.NilVal, false // try's unknown and marked results are HCL's to build
			}
			return v, true
		}
		return cty.NilVal, false // every argument failed: HCL says why
	}
}

func (c compiler) binary(e *hclsyntax.BinaryOpExpr) eval {
	var op func(a, b cty.Value) (cty.Value, bool)
	switch e.Op {
	case hclsyntax.OpEqual:
		op = func(a, b cty.Value) (cty.Value, bool) { return known(a.Equals(b)) }
	case hclsyntax.OpNotEqual:
		op = func(a, b cty.Value) (cty.Value, bool) { return known(a.Equals(b).Not()) }
	case hclsyntax.OpLogicalAnd, hclsyntax.OpLogicalOr:
		and := e.Op == hclsyntax.OpLogicalAnd
		op = func(a, b cty.Value) (cty.Value, bool) {
			switch {
			case !isBool(a) || !isBool(b):
				return cty.NilVal, false
			case and:
				return a.And(b), true
			}
			return a.Or(b), true
		}
	default:
		return nil
	}
	l, r := c.compile(e.LHS), c.compile(e.RHS)
	if l == nil || r == nil {
		return nil
	}
	return func(ctx *hcl.EvalContext) (cty.Value, bool) {
		a, ok := l(ctx)
		if !ok {
			return cty.NilVal, false
		}
		b, ok := r(ctx)
		if !ok || a.IsMarked() || b.IsMarked() {
			return cty.NilVal, false
		}
		return op(a, b)
	}
}

func known(v cty.Value) (cty.Value, bool) {
	if !v.IsKnown() {
		return cty.NilVal, false
	}
	return v, true
}

// isBool: a known, non-null bool, which HCL's logical operators take
// without conversion.
func isBool(v cty.Value) bool {
	return v.Type() == cty.Bool && v.IsKnown() && !v.IsNull() && !v.IsMarked()
}

// traversal reads variable.step.step...: attributes of objects and maps,
// literal indexes of maps, objects, lists and tuples. It gives up on
// anything HCL would answer with an error, and on unknown or marked values
// on the way.
func traversal(t hcl.Traversal) eval {
	if len(t) == 0 || t.IsRelative() {
		return nil
	}
	root := t.RootName()
	type step struct {
		attr  string
		index cty.Value // cty.NilVal for an attribute step
	}
	steps := make([]step, 0, len(t)-1)
	var names []string // the leading attribute names: what Fields answers
	for _, s := range t[1:] {
		switch s := s.(type) {
		case hcl.TraverseAttr:
			if len(names) == len(steps) {
				names = append(names, s.Name)
			}
			steps = append(steps, step{attr: s.Name})
		case hcl.TraverseIndex:
			if s.Key.IsMarked() || !s.Key.IsKnown() || s.Key.IsNull() {
				return nil
			}
			switch s.Key.Type() {
			case cty.String, cty.Number:
			default:
				return nil
			}
			steps = append(steps, step{index: s.Key})
		default:
			return nil
		}
	}
	return func(ctx *hcl.EvalContext) (cty.Value, bool) {
		v, ok := lookup(ctx, root)
		if !ok {
			return cty.NilVal, false
		}
		rest := steps
		if v.Type() == fieldsType {
			if len(names) == 0 {
				return cty.NilVal, false // the whole value: only its builder has it
			}
			if v, ok = (*v.EncapsulatedValue().(*Fields)).Field(names); !ok {
				return cty.NilVal, false
			}
			rest = steps[len(names):]
		}
		for _, s := range rest {
			if s.index == cty.NilVal {
				v, ok = attr(v, s.attr)
			} else {
				v, ok = index(v, s.index)
			}
			if !ok {
				return cty.NilVal, false
			}
		}
		// The value itself may hold marks or unknowns: HCL returns it
		// as it is too, and every step above read a known, unmarked value.
		return v, true
	}
}

// lookup finds a root variable as HCL does: the nearest context that has
// it, walking up the parents.
func lookup(ctx *hcl.EvalContext, name string) (cty.Value, bool) {
	for c := ctx; c != nil; c = c.Parent() {
		if c.Variables == nil {
			continue
		}
		if v, ok := c.Variables[name]; ok {
			return v, true
		}
	}
	return cty.NilVal, false
}

// usable: a value a step may read without HCL's help.
func usable(v cty.Value) bool {
	return !v.IsMarked() && v.IsKnown() && !v.IsNull()
}

func attr(v cty.Value, name string) (cty.Value, bool) {
	if !usable(v) {
		return cty.NilVal, false
	}
	ty := v.Type()
	switch {
	case ty.IsObjectType():
		if !ty.HasAttribute(name) {
			return cty.NilVal, false
		}
		return v.GetAttr(name), true
	case ty.IsMapType():
		k := cty.StringVal(name)
		if !v.HasIndex(k).True() {
			return cty.NilVal, false
		}
		return v.Index(k), true
	}
	return cty.NilVal, false
}

func index(v cty.Value, k cty.Value) (cty.Value, bool) {
	if !usable(v) {
		return cty.NilVal, false
	}
	ty := v.Type()
	switch {
	case ty.IsObjectType():
		if k.Type() != cty.String {
			return cty.NilVal, false
		}
		return attr(v, k.AsString())
	case ty.IsMapType():
		if k.Type() != cty.String {
			return cty.NilVal, false
		}
		if !v.HasIndex(k).True() {
			return cty.NilVal, false
		}
		return v.Index(k), true
	case ty.IsListType() || ty.IsTupleType():
		if k.Type() != cty.Number {
			return cty.NilVal, false
		}
		i, acc := k.AsBigFloat().Int64()
		if acc != 0 || i < 0 || i >= int64(v.LengthInt()) {
			return cty.NilVal, false
		}
		return v.Index(cty.NumberIntVal(i)), true
	}
	return cty.NilVal, false
}
