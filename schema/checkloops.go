package schema

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// The check at load (CheckExpr) evaluates an expression to find what is
// wrong with it as written: an unknown function, a wrong argument, an
// attribute its values cannot have. It must not do the work the
// expression does at run time: a template looping twice over a local of
// 20,000 items would take minutes to check. So while it checks, each for
// expression is checked once, not run: its collection is evaluated, its
// body evaluated once with the loop's variables unknown (of the
// collection's element type where all elements share one), and the for
// gives an unknown value. What the check then costs grows with the
// expression's text, not with its data.

// symbolicFor stands for a for expression's collection during the check:
// it evaluates the collection, checks the for's body once (forBody), and
// gives the collection's type with an unknown value, which HCL's for
// does not iterate.
type symbolicFor struct {
	hclsyntax.Expression // the collection as written
	loop                 *hclsyntax.ForExpr
	body                 forBody
}

// forBody is a for's key and value expressions as written.
type forBody struct{ key, val hclsyntax.Expression }

func (s *symbolicFor) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	coll, diags := s.Expression.Value(ctx)
	if diags.HasErrors() {
		return coll, diags
	}
	plain, _ := coll.Unmark()
	key, elem := loopVars(plain)
	child := ctx.NewChild()
	child.Variables = map[string]cty.Value{s.loop.ValVar: elem}
	if s.loop.KeyVar != "" {
		child.Variables[s.loop.KeyVar] = key
	}
	for _, e := range []hclsyntax.Expression{s.body.key, s.body.val} {
		if e != nil {
			_, d := e.Value(child)
			diags = append(diags, d...)
		}
	}
	if plain.IsNull() {
		return coll, diags // HCL's for says what is wrong with a null collection
	}
	return cty.UnknownVal(coll.Type()).WithMarks(coll.Marks()), diags
}

// loopVars are unknown values standing for a for's key and element over
// coll: of their types where the collection's type says them.
func loopVars(coll cty.Value) (key, elem cty.Value) {
	key, elem = cty.DynamicVal, cty.DynamicVal
	ty := coll.Type()
	switch {
	case ty.IsListType():
		key, elem = cty.UnknownVal(cty.Number), cty.UnknownVal(ty.ElementType())
	case ty.IsSetType():
		key, elem = cty.UnknownVal(ty.ElementType()), cty.UnknownVal(ty.ElementType())
	case ty.IsMapType():
		key, elem = cty.UnknownVal(cty.String), cty.UnknownVal(ty.ElementType())
	case ty.IsTupleType():
		key = cty.UnknownVal(cty.Number)
		if ets := ty.TupleElementTypes(); len(ets) > 0 && allEqual(ets) {
			elem = cty.UnknownVal(ets[0])
		}
	case ty.IsObjectType():
		key = cty.UnknownVal(cty.String)
	}
	return key, elem
}

func allEqual(ts []cty.Type) bool {
	for _, t := range ts[1:] {
		if !t.Equals(ts[0]) {
			return false
		}
	}
	return true
}

// checkLoopsOnce makes every for expression of expr check its body once
// instead of running (symbolicFor) until the returned restore is called.
// The for's body is evaluated from the wrapper, and the for itself sees
// an unknown collection, so nested fors are checked once each too.
func checkLoopsOnce(expr hcl.Expression) (restore func()) {
	syn, ok := expr.(hclsyntax.Node)
	if !ok {
		return func() {}
	}
	type saved struct {
		loop           *hclsyntax.ForExpr
		coll, key, val hclsyntax.Expression
	}
	var fors []saved
	_ = hclsyntax.VisitAll(syn, func(n hclsyntax.Node) hcl.Diagnostics {
		if f, ok := n.(*hclsyntax.ForExpr); ok {
			fors = append(fors, saved{f, f.CollExpr, f.KeyExpr, f.ValExpr})
		}
		return nil
	})
	for _, s := range fors {
		s.loop.CollExpr = &symbolicFor{Expression: s.coll, loop: s.loop, body: forBody{key: s.key, val: s.val}}
	}
	return func() {
		for _, s := range fors {
			s.loop.CollExpr = s.coll
		}
	}
}
