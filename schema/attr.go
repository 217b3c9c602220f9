package schema

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// AttrInfo describes one attribute for decoding, validation and the generated
// reference docs. Every handle carries one.
type AttrInfo struct {
	Name      string `json:"name"`
	Type      string `json:"type"` // human type: "string", "duration", "list(string)", "reference", "expression"...
	Doc       string `json:"doc"`
	Example   string `json:"example,omitempty"` // HCL text
	Default   string `json:"default,omitempty"` // HCL text of the default, "" when none
	Required  bool   `json:"required"`
	Sensitive bool   `json:"sensitive"`
	// Roots lists the runtime variables an expression attribute may use
	// (record, object, each). Empty for attributes evaluated at compile time.
	Roots []string `json:"roots,omitempty"`
	// RefKinds lists the block kinds a reference attribute may point at.
	RefKinds []string `json:"ref_kinds,omitempty"`
	// Enum lists the values an enumerated string attribute allows.
	Enum []string `json:"enum,omitempty"`
}

// Attribute is what a Block holds: anything that can describe itself and
// check its value in decoded content.
type Attribute interface {
	Info() *AttrInfo
	// Check reads the attribute and returns its diagnostics.
	Check(c *Content) hcl.Diagnostics
}

// Attr is a typed attribute handle. It is declared once (usually as a
// package-level variable in a node's spec.go) and read with Get, so an
// attribute's name is written in exactly one place.
type Attr[T any] struct {
	info   AttrInfo
	decode func(v cty.Value, rng hcl.Range) (T, hcl.Diagnostics)
	def    *T
	// raw handles (expressions, references) do not evaluate the expression.
	raw func(expr hcl.Expression, c *Content) (T, hcl.Diagnostics)
	// keepMarks hands decode the value with its sensitive marks (handles
	// returning a cty.Value); the others decode the raw value.
	keepMarks bool
}

// Info implements Attribute.
func (a *Attr[T]) Info() *AttrInfo { return &a.info }

// Required marks the attribute as mandatory.
func (a *Attr[T]) Required() *Attr[T] { a.info.Required = true; return a }

// Doc sets the documentation sentence(s).
func (a *Attr[T]) Doc(s string) *Attr[T] { a.info.Doc = s; return a }

// Example sets an HCL example value for the docs.
func (a *Attr[T]) Example(s string) *Attr[T] { a.info.Example = s; return a }

// Sensitive marks the value as secret: it is never printed or logged.
func (a *Attr[T]) Sensitive() *Attr[T] { a.info.Sensitive = true; return a }

// Default sets the value used when the attribute is absent, and the HCL text
// shown for it in the docs.
func (a *Attr[T]) Default(v T, hclText string) *Attr[T] {
	a.def = &v
	a.info.Default = hclText
	return a
}

// Get reads the attribute from decoded content. It returns the default (or
// the zero value) and the block's range when the attribute is absent.
func (a *Attr[T]) Get(c *Content) (T, hcl.Range, hcl.Diagnostics) {
	var zero T
	attr, ok := c.Attrs[a.info.Name]
	if !ok {
		if a.info.Required {
			// Decode already reported it; the error keeps constructors
			// from reading a zero value they never expect.
			return zero, c.Range, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Missing required argument",
				Detail:  fmt.Sprintf("The argument %q is required, but no definition was found.", a.info.Name),
				Subject: c.Range.Ptr(), Extra: derivedExtra{}}}
		}
		if a.def != nil {
			return *a.def, c.Range, nil
		}
		return zero, c.Range, nil
	}
	rng := attr.Expr.Range()
	if a.raw != nil {
		v, diags := a.raw(attr.Expr, c)
		return v, rng, diags
	}
	refs := checkRefs(attr.Expr, c.Ctx, nil)
	val, diags := attr.Expr.Value(c.Ctx)
	diags = append(refs, withoutOverlaps(diags, refs)...)
	if diags.HasErrors() {
		return zero, rng, diags
	}
	if a.info.Sensitive {
		val = MarkSensitive(val)
	}
	marked := val
	val = rawValue(val)
	if !val.IsWhollyKnown() {
		// Only a variable or local value that failed (its error already
		// reported) leaves a value unknown when the configuration loads.
		return zero, rng, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Value not known at load time",
			Detail:   fmt.Sprintf("The argument %q must be computable from variables, locals and functions when the configuration loads; a variable or local value it uses has an error.", a.info.Name),
			Subject:  rng.Ptr(),
			Extra:    derivedExtra{},
		}}
	}
	if val.IsNull() {
		if a.info.Required {
			return zero, rng, hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  "Missing required argument",
				Detail:   fmt.Sprintf("The argument %q is required, but it was set to null.", a.info.Name),
				Subject:  rng.Ptr(),
			}}
		}
		if a.def != nil {
			return *a.def, rng, nil
		}
		return zero, rng, nil
	}
	if a.keepMarks {
		val = marked
	}
	v, d := a.decode(val, rng)
	return v, rng, append(diags, d...)
}

// Read is Get for a decoder that gathers every diagnostic in one list: it
// appends the attribute's diagnostics to diags and returns the value.
func (a *Attr[T]) Read(c *Content, diags *hcl.Diagnostics) T {
	v, _, d := a.Get(c)
	*diags = append(*diags, d...)
	return v
}

// Range returns where the attribute's value is written, or the block's
// range when it is absent (the range Get returns).
func (a *Attr[T]) Range(c *Content) hcl.Range {
	if attr, ok := c.Attrs[a.info.Name]; ok {
		return attr.Expr.Range()
	}
	return c.Range
}

// Check implements Attribute.
func (a *Attr[T]) Check(c *Content) hcl.Diagnostics {
	_, _, diags := a.Get(c)
	return diags
}

// IsSensitive reports whether the attribute's value is sensitive: declared
// Sensitive, or computed from a sensitive variable. Get hands such a value
// over raw; a node that uses it raw (a path, an address) keeps it out of
// its messages.
func (a *Attr[T]) IsSensitive(c *Content) bool {
	if a.info.Sensitive {
		return true
	}
	attr, ok := c.Attrs[a.info.Name]
	if !ok || a.raw != nil {
		return false
	}
	v, diags := attr.Expr.Value(c.Ctx)
	return !diags.HasErrors() && IsSensitive(v)
}

// Has reports whether the attribute is set in the content.
func (a *Attr[T]) Has(c *Content) bool {
	_, ok := c.Attrs[a.info.Name]
	return ok
}

// Name returns the attribute's name.
func (a *Attr[T]) Name() string { return a.info.Name }

func typeErr(name, want string, rng hcl.Range, err error) hcl.Diagnostics {
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "Incorrect attribute value type",
		Detail:   fmt.Sprintf("Inappropriate value for attribute %q: %s required.", name, want),
		Subject:  rng.Ptr(),
	}}
}

// convertTo converts v to ty, returning a diagnostic naming the attribute.
func convertTo(name, want string, v cty.Value, ty cty.Type, rng hcl.Range) (cty.Value, hcl.Diagnostics) {
	out, err := convert.Convert(v, ty)
	if err != nil {
		return cty.NilVal, typeErr(name, want, rng, err)
	}
	return out, nil
}
