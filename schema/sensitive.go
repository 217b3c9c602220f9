package schema

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// SensitiveValues returns the raw text of c's sensitive values (nested
// blocks included): every string of an attribute declared Sensitive, and
// every part of any attribute computed from a sensitive variable. A node
// unmarks such a value where it needs it raw (a pin path, a subject), so
// views mask that text too when an error or a status repeats it. Values
// that do not evaluate here (runtime expressions) are left to their marks
// and to the attribute's own diagnostics.
func (b Block) SensitiveValues(c *Content) []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, a := range b.Attrs {
		info := a.Info()
		attr, ok := c.Attrs[info.Name]
		if !ok || info.Type == "reference" || info.Type == "expression" {
			continue
		}
		if !info.Sensitive && !readsMarked(attr.Expr, c.Ctx) {
			continue // nothing it reads is marked, so neither is its value
		}
		v, diags := attr.Expr.Value(c.Ctx)
		if diags.HasErrors() {
			continue
		}
		if info.Sensitive {
			v = MarkSensitive(v)
		}
		out = append(out, SensitiveStrings(v)...)
	}
	for _, bt := range b.Blocks {
		for _, nested := range c.Blocks[bt.Name] {
			out = append(out, bt.Body.SensitiveValues(nested)...)
		}
	}
	return out
}

// HasSensitive reports whether b declares a Sensitive attribute, nested
// blocks included.
func (b Block) HasSensitive() bool {
	for _, a := range b.Attrs {
		if a.Info().Sensitive {
			return true
		}
	}
	for _, bt := range b.Blocks {
		if bt.Body.HasSensitive() {
			return true
		}
	}
	return false
}

// readsMarked reports whether expr may read a marked value from ctx: a
// value it refers to holds a mark, or one cannot be read on its own (an
// index computed at run time), which counts as marked. Marks only spread
// from what an expression reads (can() included), so an expression that
// reads none evaluates to an unmarked value.
func readsMarked(expr hcl.Expression, ctx *hcl.EvalContext) bool {
	for _, tr := range expr.Variables() {
		if !hasRoot(ctx, tr.RootName()) {
			continue // not known here (object, record, each): the value does not evaluate
		}
		v, diags := tr.TraverseAbs(ctx)
		if diags.HasErrors() || v.ContainsMarked() {
			return true
		}
	}
	return false
}

func hasRoot(ctx *hcl.EvalContext, name string) bool {
	for c := ctx; c != nil; c = c.Parent() {
		if _, ok := c.Variables[name]; ok {
			return true
		}
	}
	return false
}

// rawValue unmarks a value read by a handle whose Go type cannot carry
// marks. The caller has the raw value on purpose; SensitiveValues gives
// views its text.
func rawValue(v cty.Value) cty.Value {
	if !IsSensitive(v) {
		return v
	}
	v, _ = v.UnmarkDeep()
	return v
}

// DiagShowsSensitive reports whether a diagnostic HCL built while
// evaluating an expression may quote a sensitive value: the expression
// reads one, or its value is one ("Duplicate object key" quotes the key
// upper(var.token) produced, which no list of secret texts holds).
func DiagShowsSensitive(d *hcl.Diagnostic) bool {
	if d.Expression == nil || d.EvalContext == nil {
		return false
	}
	for _, tr := range d.Expression.Variables() {
		if v, diags := tr.TraverseAbs(d.EvalContext); !diags.HasErrors() && IsSensitive(v) {
			return true
		}
	}
	v, _ := d.Expression.Value(d.EvalContext)
	return IsSensitive(v)
}
