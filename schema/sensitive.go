package schema

import "github.com/zclconf/go-cty/cty"

// SensitiveValues returns the string values of c's attributes declared
// Sensitive (nested blocks included), for views to mask. Values that do
// not evaluate are left to the attribute's own diagnostics.
func (b Block) SensitiveValues(c *Content) []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, a := range b.Attrs {
		info := a.Info()
		attr, ok := c.Attrs[info.Name]
		if !info.Sensitive || !ok {
			continue
		}
		v, diags := attr.Expr.Value(c.Ctx)
		if diags.HasErrors() || !v.IsWhollyKnown() || v.IsNull() {
			continue
		}
		v, _ = v.UnmarkDeep()
		if v.Type() == cty.String && v.AsString() != "" {
			out = append(out, v.AsString())
		}
	}
	for _, bt := range b.Blocks {
		for _, nested := range c.Blocks[bt.Name] {
			out = append(out, bt.Body.SensitiveValues(nested)...)
		}
	}
	return out
}
