package schema

import (
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// String declares a string attribute.
func String(name string) *Attr[string] {
	a := &Attr[string]{info: AttrInfo{Name: name, Type: "string"}}
	a.decode = func(v cty.Value, rng hcl.Range) (string, hcl.Diagnostics) {
		v, diags := convertTo(name, "string", v, cty.String, rng)
		if diags.HasErrors() {
			return "", diags
		}
		return v.AsString(), nil
	}
	return a
}

// Enum declares a string attribute restricted to the given values.
func Enum(name string, values ...string) *Attr[string] {
	a := String(name)
	a.info.Type = "string, one of " + quoteList(values)
	a.info.Enum = values
	inner := a.decode
	a.decode = func(v cty.Value, rng hcl.Range) (string, hcl.Diagnostics) {
		s, diags := inner(v, rng)
		if diags.HasErrors() {
			return s, diags
		}
		if !slices.Contains(values, s) {
			detail := fmt.Sprintf("The argument %q must be one of %s.", name, quoteList(values))
			if s2 := DidYouMean(s, values); s2 != "" {
				detail += fmt.Sprintf(" Did you mean %q?", s2)
			}
			return s, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid value for " + name, Detail: detail, Subject: rng.Ptr()}}
		}
		return s, nil
	}
	return a
}

// Bool declares a bool attribute.
func Bool(name string) *Attr[bool] {
	a := &Attr[bool]{info: AttrInfo{Name: name, Type: "bool"}}
	a.decode = func(v cty.Value, rng hcl.Range) (bool, hcl.Diagnostics) {
		v, diags := convertTo(name, "bool", v, cty.Bool, rng)
		if diags.HasErrors() {
			return false, diags
		}
		return v.True(), nil
	}
	return a
}

// Int declares a whole-number attribute.
func Int(name string) *Attr[int64] {
	a := &Attr[int64]{info: AttrInfo{Name: name, Type: "number"}}
	a.decode = func(v cty.Value, rng hcl.Range) (int64, hcl.Diagnostics) {
		v, diags := convertTo(name, "number", v, cty.Number, rng)
		if diags.HasErrors() {
			return 0, diags
		}
		bf := v.AsBigFloat()
		i, acc := bf.Int64()
		if acc != big.Exact || !bf.IsInt() {
			return 0, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid value for " + name,
				Detail: fmt.Sprintf("The argument %q must be a whole number.", name), Subject: rng.Ptr()}}
		}
		return i, nil
	}
	return a
}

// Duration declares a duration attribute written as a string ("100ms", "30s", "5m").
func Duration(name string) *Attr[time.Duration] {
	a := &Attr[time.Duration]{info: AttrInfo{Name: name, Type: "duration"}}
	a.decode = func(v cty.Value, rng hcl.Range) (time.Duration, hcl.Diagnostics) {
		v, diags := convertTo(name, `duration string such as "30s"`, v, cty.String, rng)
		if diags.HasErrors() {
			return 0, diags
		}
		d, err := ParseDuration(v.AsString())
		if err != nil {
			return 0, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid duration",
				Detail: fmt.Sprintf("The argument %q: %s.", name, err), Subject: rng.Ptr()}}
		}
		return d, nil
	}
	return a
}

// Size declares a byte size attribute written as a string ("100MiB", "4KB") or a number of bytes.
func Size(name string) *Attr[int64] {
	a := &Attr[int64]{info: AttrInfo{Name: name, Type: "size"}}
	a.decode = func(v cty.Value, rng hcl.Range) (int64, hcl.Diagnostics) {
		if v.Type() == cty.Number {
			v, _ = convertTo(name, "size", v, cty.String, rng)
		}
		v, diags := convertTo(name, `size string such as "100MiB"`, v, cty.String, rng)
		if diags.HasErrors() {
			return 0, diags
		}
		n, err := ParseSize(v.AsString())
		if err != nil {
			return 0, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid size",
				Detail: fmt.Sprintf("The argument %q: %s.", name, err), Subject: rng.Ptr()}}
		}
		return n, nil
	}
	return a
}

// StringList declares a list(string) attribute.
func StringList(name string) *Attr[[]string] {
	a := &Attr[[]string]{info: AttrInfo{Name: name, Type: "list(string)"}}
	a.decode = func(v cty.Value, rng hcl.Range) ([]string, hcl.Diagnostics) {
		v, diags := convertTo(name, "list of strings", v, cty.List(cty.String), rng)
		if diags.HasErrors() {
			return nil, diags
		}
		out := make([]string, 0, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			if e.IsNull() {
				return nil, typeErr(name, "list of non-null strings", rng, nil)
			}
			out = append(out, e.AsString())
		}
		return out, nil
	}
	return a
}

// Strings declares an attribute holding one string or a list of strings
// (url = "nats://a:4222" or url = ["nats://a:4222", "nats://b:4222"]).
func Strings(name string) *Attr[[]string] {
	list := StringList(name)
	a := &Attr[[]string]{info: AttrInfo{Name: name, Type: "string or list(string)"}}
	a.decode = func(v cty.Value, rng hcl.Range) ([]string, hcl.Diagnostics) {
		if v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
			return []string{v.AsString()}, nil
		}
		out, diags := list.decode(v, rng)
		if diags.HasErrors() {
			return nil, typeErr(name, "string or list of strings", rng, nil)
		}
		return out, nil
	}
	return a
}

// Value declares an attribute of any type, evaluated when the config loads.
// The value keeps its sensitive marks (SensitiveMark), so records built from
// it are masked in every view; a node unmarks it where it needs it raw.
func Value(name string) *Attr[cty.Value] {
	a := &Attr[cty.Value]{info: AttrInfo{Name: name, Type: "any"}, keepMarks: true}
	a.decode = func(v cty.Value, rng hcl.Range) (cty.Value, hcl.Diagnostics) {
		if err := CheckNumbers(v); err != nil {
			return v, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid number",
				Detail: fmt.Sprintf("The argument %q holds a number that cannot be used: %s.", name, err), Subject: rng.Ptr()}}
		}
		return v, nil
	}
	return a
}

// Expr declares an expression evaluated at run time, per record or object.
// The expression may use the given roots (for example "record") besides
// var, local and functions. Get checks the references and evaluates the
// expression once with unknown roots, so unknown functions, wrong argument
// counts and references to missing variables are reported at load time.
func Expr(name string, roots ...string) *Attr[hcl.Expression] {
	a := &Attr[hcl.Expression]{info: AttrInfo{Name: name, Type: "expression", Roots: roots}}
	a.raw = func(expr hcl.Expression, c *Content) (hcl.Expression, hcl.Diagnostics) {
		return expr, CheckExpr(expr, c.Ctx, roots)
	}
	return a
}

// CheckExpr validates a runtime expression: every variable it references is a
// known root, var or local, and it evaluates (with unknown roots) without error.
func CheckExpr(expr hcl.Expression, ctx *hcl.EvalContext, roots []string) hcl.Diagnostics {
	refs := checkRefs(expr, ctx, roots)
	child := ctx.NewChild()
	child.Functions = ctx.Functions // HCL suggests "did you mean" from the innermost context only
	child.Variables = make(map[string]cty.Value, len(roots))
	for _, r := range roots {
		child.Variables[r] = cty.DynamicVal
	}
	restore := checkLoopsOnce(expr)
	v, d := expr.Value(child)
	restore()
	if !d.HasErrors() {
		if err := CheckNumbers(v); err != nil {
			d = append(d, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid number",
				Detail: sentenceOf(err) + " Check the expression's arithmetic.", Subject: expr.Range().Ptr()})
		}
	}
	diags := append(refs, withoutOverlaps(d, refs)...)
	return appendNew(diags, shortCircuited(expr, child, append([]string{"var", "local"}, roots...)))
}

// Ref declares a reference to another block, such as
// input = source.kubernetes.pods or cluster = cluster.prod. Get returns the
// reference's traversal; the engine resolves it.
func Ref(name string, kinds ...string) *Attr[hcl.Traversal] {
	a := &Attr[hcl.Traversal]{info: AttrInfo{Name: name, Type: "reference", RefKinds: kinds}}
	a.raw = func(expr hcl.Expression, c *Content) (hcl.Traversal, hcl.Diagnostics) {
		tr, diags := hcl.AbsTraversalForExpr(expr)
		if diags.HasErrors() {
			return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid reference",
				Detail:  fmt.Sprintf("The argument %q must be a reference to a %s block, such as %s, written without quotes.", name, strings.Join(kinds, " or "), refExample(kinds)),
				Subject: expr.Range().Ptr()}}
		}
		return tr, nil
	}
	return a
}

func refExample(kinds []string) string {
	if len(kinds) > 0 && kinds[0] == "cluster" {
		return "cluster.prod"
	}
	return "source.kubernetes.pods"
}

func quoteList(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}

// Refs declares a list of references to other blocks, such as
// inputs = [source.kubernetes.pods, source.static.cidrs]. Get returns one
// traversal per element; the engine resolves them. An element that is not
// a reference is reported at its own range.
func Refs(name string, kinds ...string) *Attr[[]hcl.Traversal] {
	a := &Attr[[]hcl.Traversal]{info: AttrInfo{Name: name, Type: "list(reference)", RefKinds: kinds}}
	a.raw = func(expr hcl.Expression, c *Content) ([]hcl.Traversal, hcl.Diagnostics) {
		elems, diags := hcl.ExprList(expr)
		if diags.HasErrors() {
			return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid reference list",
				Detail:  fmt.Sprintf("The argument %q must be a list of references to %s blocks, such as [%s], written without quotes.", name, strings.Join(kinds, " or "), refExample(kinds)),
				Subject: expr.Range().Ptr()}}
		}
		out := make([]hcl.Traversal, 0, len(elems))
		for _, e := range elems {
			tr, d := hcl.AbsTraversalForExpr(e)
			if d.HasErrors() {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid reference",
					Detail:  fmt.Sprintf("Each element of %q must be a reference to a %s block, such as %s, written without quotes.", name, strings.Join(kinds, " or "), refExample(kinds)),
					Subject: e.Range().Ptr()})
				continue
			}
			out = append(out, tr)
		}
		return out, diags
	}
	return a
}
