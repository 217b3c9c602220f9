package schema

import (
	"fmt"
	"maps"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// Variable is a declared input variable.
type Variable struct {
	Name        string
	Description string
	Type        cty.Type
	Default     cty.Value // cty.NilVal when the variable is required
	Sensitive   bool
	DeclRange   hcl.Range
}

var variableSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "type"}, {Name: "default"}, {Name: "description"}, {Name: "sensitive"},
}}

func decodeVariable(blk *hcl.Block) (*Variable, hcl.Diagnostics) {
	v := &Variable{Name: blk.Labels[0], Type: cty.DynamicPseudoType, DeclRange: blk.DefRange}
	content, diags := blk.Body.Content(variableSchema)
	if a, ok := content.Attributes["type"]; ok {
		ty, d := typeexpr.TypeConstraint(a.Expr)
		diags = append(diags, d...)
		if !d.HasErrors() {
			v.Type = ty
		}
	}
	if a, ok := content.Attributes["description"]; ok {
		val, d := literal(a, cty.String, "a string")
		diags = append(diags, d...)
		if !d.HasErrors() {
			v.Description = val.AsString()
		}
	}
	if a, ok := content.Attributes["sensitive"]; ok {
		val, d := literal(a, cty.Bool, "true or false")
		diags = append(diags, d...)
		if !d.HasErrors() {
			v.Sensitive = val.True()
		}
	}
	if a, ok := content.Attributes["default"]; ok {
		val, d := a.Expr.Value(nil)
		diags = append(diags, d...)
		if !d.HasErrors() {
			conv, err := convert.Convert(val, v.Type)
			if err != nil {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid default value for variable",
					Detail:  fmt.Sprintf("The default value of variable %q does not match its type %s: %s.", v.Name, typeexpr.TypeString(v.Type), err),
					Subject: a.Expr.Range().Ptr()})
			} else {
				v.Default = conv
			}
		}
	}
	if diags.HasErrors() {
		// A broken declaration is reported once, not again as a variable
		// without a value or through every attribute that uses it.
		v.Default = failed(v.Type)
	}
	return v, diags
}

// literal evaluates a variable attribute that must be a constant of type ty.
func literal(a *hcl.Attribute, ty cty.Type, want string) (cty.Value, hcl.Diagnostics) {
	val, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	conv, err := convert.Convert(val, ty)
	if err != nil || conv.IsNull() || !conv.IsKnown() {
		return cty.NilVal, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Incorrect attribute value type",
			Detail: fmt.Sprintf("Inappropriate value for attribute %q: %s required.", a.Name, want), Subject: a.Expr.Range().Ptr()}}
	}
	return conv, nil
}

// evalVariables resolves each variable from -var, then PIPELINE_VAR_name,
// then its default.
func evalVariables(decls map[string]*Variable, flags []string, environ []string) (cty.Value, []string, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	type setting struct{ text, origin string }
	raw := map[string]setting{}
	for _, kv := range environ {
		if name, val, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(name, "PIPELINE_VAR_") {
			if _, declared := decls[strings.TrimPrefix(name, "PIPELINE_VAR_")]; declared {
				raw[strings.TrimPrefix(name, "PIPELINE_VAR_")] = setting{val, "the environment variable " + name}
			}
		}
	}
	for _, f := range flags {
		name, val, ok := strings.Cut(f, "=")
		if !ok || name == "" {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid -var option",
				Detail: fmt.Sprintf("The option -var %q is not of the form name=value.", f)})
			continue
		}
		if _, declared := decls[name]; !declared {
			detail := fmt.Sprintf("The option -var sets %q, but no variable of that name is declared.", name)
			if s := DidYouMean(name, sortedKeys(decls)); s != "" {
				detail += fmt.Sprintf(" Did you mean %q?", s)
			}
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Undeclared variable", Detail: detail})
			continue
		}
		raw[name] = setting{val, "-var " + name}
	}
	vals := map[string]cty.Value{}
	var sensitive []string
	for _, name := range sortedKeys(decls) {
		v := decls[name]
		val := v.Default
		if set, ok := raw[name]; ok {
			parsed, d := parseVarValue(v, set.text, set.origin)
			diags = append(diags, d...)
			val = parsed
			if d.HasErrors() {
				val = failed(v.Type)
			}
		} else if val == cty.NilVal {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "No value for required variable",
				Detail:  fmt.Sprintf("The variable %q has no default. Set it with -var %s=VALUE or the environment variable PIPELINE_VAR_%s.", name, name, name),
				Subject: v.DeclRange.Ptr()})
			val = failed(v.Type)
		}
		if val == cty.NilVal {
			val = failed(v.Type)
		}
		if v.Sensitive {
			// The mark follows the value through every expression; the
			// strings back it up in text no value reaches whole.
			val = MarkSensitive(val)
			sensitive = append(sensitive, SensitiveStrings(val)...)
		}
		vals[name] = val
	}
	return cty.ObjectVal(vals), sensitive, diags
}

// parseVarValue reads the text of a -var or PIPELINE_VAR_ setting: the text
// itself for a string (or untyped) variable, an HCL expression otherwise.
// origin names the setting in diagnostics, which point at the declaration.
func parseVarValue(v *Variable, s, origin string) (cty.Value, hcl.Diagnostics) {
	shown := fmt.Sprintf("%q ", s)
	if v.Sensitive {
		shown = "" // never print a secret
	}
	invalid := func(why string) (cty.Value, hcl.Diagnostics) {
		return cty.UnknownVal(v.Type), hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid value for variable",
			Detail:  fmt.Sprintf("The value %sgiven with %s does not fit variable %q of type %s: %s.", shown, origin, v.Name, typeexpr.TypeString(v.Type), why),
			Subject: v.DeclRange.Ptr()}}
	}
	val := cty.StringVal(s)
	if v.Type != cty.String && v.Type != cty.DynamicPseudoType {
		diags := CheckNesting([]byte(s), origin)
		var expr hclsyntax.Expression
		if !diags.HasErrors() {
			expr, diags = hclsyntax.ParseExpression([]byte(s), origin, hcl.InitialPos)
		}
		if !diags.HasErrors() {
			val, diags = expr.Value(nil)
		}
		if diags.HasErrors() {
			return invalid("it is not a literal value in HCL syntax such as 8080, true, [\"a\", \"b\"] or { key = \"value\" }")
		}
	}
	conv, err := convert.Convert(val, v.Type)
	if err != nil {
		return invalid(err.Error())
	}
	return conv, nil
}

// evalLocals evaluates locals in dependency order, reporting cycles and
// references to undeclared locals.
func evalLocals(ctx *hcl.EvalContext, bud *budget, attrs []*hcl.Attribute) hcl.Diagnostics {
	var diags hcl.Diagnostics
	byName := map[string]*hcl.Attribute{}
	for _, a := range attrs {
		byName[a.Name] = a
	}
	vals := map[string]cty.Value{}
	state := map[string]int{} // 0 new, 1 visiting, 2 done
	var visit func(a *hcl.Attribute)
	visit = func(a *hcl.Attribute) {
		switch state[a.Name] {
		case 1:
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cycle in local values",
				Detail: fmt.Sprintf("The local value %q depends on itself.", a.Name), Subject: a.NameRange.Ptr()})
			vals[a.Name] = failed(cty.DynamicPseudoType)
			return
		case 2:
			return
		}
		state[a.Name] = 1
		undeclared := false
		for _, tr := range a.Expr.Variables() {
			if tr.RootName() != "local" || len(tr) < 2 {
				continue
			}
			step, ok := tr[1].(hcl.TraverseAttr)
			if !ok {
				continue
			}
			dep, ok := byName[step.Name]
			if !ok {
				detail := fmt.Sprintf("No local value named %q is declared.", step.Name)
				if s := DidYouMean(step.Name, sortedKeys(byName)); s != "" {
					detail += fmt.Sprintf(" Did you mean %q?", s)
				}
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Reference to undeclared local value",
					Detail: detail, Subject: tr.SourceRange().Ptr()})
				undeclared = true
				continue
			}
			visit(dep)
		}
		if _, done := vals[a.Name]; !done {
			v := evalLocal(ctx, a, vals, undeclared, &diags)
			v, d := bud.chargeLocal(a, v)
			diags = append(diags, d...)
			vals[a.Name] = v
		}
		state[a.Name] = 2
	}
	for _, a := range attrs {
		visit(a)
	}
	ctx.Variables["local"] = cty.ObjectVal(vals)
	return diags
}

// evalLocal evaluates one local value whose dependencies are in vals. A
// local that fails (or refers to an undeclared one) gets a failed value, so
// whatever uses it reports no second, derived error.
func evalLocal(ctx *hcl.EvalContext, a *hcl.Attribute, vals map[string]cty.Value, undeclared bool, diags *hcl.Diagnostics) cty.Value {
	if undeclared {
		return failed(cty.DynamicPseudoType)
	}
	// The expression sees the locals it names (all of them only when it
	// uses local as a whole): building the object of every local for
	// each one made a load quadratic in the number of locals.
	deps := map[string]cty.Value{}
	for _, tr := range a.Expr.Variables() {
		if tr.RootName() != "local" {
			continue
		}
		step, ok := tr[min(1, len(tr)-1)].(hcl.TraverseAttr)
		if !ok || len(tr) < 2 {
			deps = maps.Clone(vals)
			break
		}
		if v, ok := vals[step.Name]; ok {
			deps[step.Name] = v
		}
	}
	ctx.Variables["local"] = cty.ObjectVal(deps)
	for _, tr := range a.Expr.Variables() {
		if tr.RootName() == "local" {
			continue // checked by evalLocals
		}
		if d := checkRef(tr, ctx, nil); d != nil {
			*diags = append(*diags, d)
			undeclared = true
		}
	}
	if undeclared {
		return failed(cty.DynamicPseudoType)
	}
	v, d := a.Expr.Value(ctx)
	*diags = append(*diags, d...)
	if d.HasErrors() {
		return failed(cty.DynamicPseudoType)
	}
	return v
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
