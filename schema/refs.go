package schema

import (
	"fmt"
	"slices"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// checkRefs reports, before an expression is evaluated, every reference that
// cannot resolve: a root other than var, local and the given run-time roots,
// and a variable or local value that is not declared. These diagnostics say
// what to write instead, where HCL would say "Unsupported attribute" or
// "Unknown variable".
func checkRefs(expr hcl.Expression, ctx *hcl.EvalContext, roots []string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, tr := range expr.Variables() {
		if d := checkRef(tr, ctx, roots); d != nil {
			diags = append(diags, d)
		}
	}
	return diags
}

// withoutOverlaps returns diags minus those whose subject overlaps the
// subject of one of refs: once checkRefs explained a reference, HCL's own
// error about the same reference would only repeat it, less clearly.
func withoutOverlaps(diags, refs hcl.Diagnostics) hcl.Diagnostics {
	if len(refs) == 0 {
		return diags
	}
	var out hcl.Diagnostics
	for _, d := range diags {
		covered := false
		for _, r := range refs {
			if d.Subject != nil && r.Subject != nil && d.Subject.Overlaps(*r.Subject) {
				covered = true
			}
		}
		if !covered {
			out = append(out, d)
		}
	}
	return out
}

// checkRef checks one reference; see checkRefs.
func checkRef(tr hcl.Traversal, ctx *hcl.EvalContext, roots []string) *hcl.Diagnostic {
	switch root := tr.RootName(); {
	case root == "var" || root == "local":
		return checkDeclared(tr, ctx)
	case slices.Contains(roots, root):
		return nil
	default:
		return badRoot(tr, roots)
	}
}

// checkDeclared reports var.NAME or local.NAME when NAME is not declared.
func checkDeclared(tr hcl.Traversal, ctx *hcl.EvalContext) *hcl.Diagnostic {
	if ctx == nil || len(tr) < 2 {
		return nil
	}
	step, ok := tr[1].(hcl.TraverseAttr)
	// Resolving the root alone looks through parent contexts too (a node
	// may evaluate in a child context holding extra functions).
	obj, diags := hcl.Traversal{hcl.TraverseRoot{Name: tr.RootName()}}.TraverseAbs(ctx)
	if !ok || diags.HasErrors() || !obj.Type().IsObjectType() || obj.Type().HasAttribute(step.Name) {
		return nil
	}
	var names []string
	for name := range obj.Type().AttributeTypes() {
		names = append(names, name)
	}
	slices.Sort(names)
	d := &hcl.Diagnostic{Severity: hcl.DiagError, Subject: tr.SourceRange().Ptr()}
	if tr.RootName() == "var" {
		d.Summary = "Reference to undeclared variable"
		d.Detail = fmt.Sprintf("No variable named %q is declared; declare it with a variable %q {} block.", step.Name, step.Name)
	} else {
		d.Summary = "Reference to undeclared local value"
		d.Detail = fmt.Sprintf("No local value named %q is declared.", step.Name)
	}
	if s := DidYouMean(step.Name, names); s != "" {
		d.Detail += fmt.Sprintf(" Did you mean %q?", s)
	}
	return d
}

// runtimeRoots are the names run-time expressions use; in an attribute
// evaluated when the configuration loads they deserve a precise hint.
var runtimeRoots = []string{"record", "object", "each"}

func badRoot(tr hcl.Traversal, roots []string) *hcl.Diagnostic {
	root := tr.RootName()
	allowed := append([]string{"var", "local"}, roots...)
	detail := fmt.Sprintf("An expression here may refer only to %s.", quoteList(allowed))
	if len(roots) == 0 {
		detail = "This argument is evaluated once, when the configuration loads, so it may refer only to var and local values and call functions."
		if slices.Contains(runtimeRoots, root) {
			detail += fmt.Sprintf(" %q exists only in expressions evaluated for each record or object at run time.", root)
		}
	}
	if s := DidYouMean(root, allowed); s != "" {
		detail += fmt.Sprintf(" Did you mean %q?", s)
	}
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid reference", Detail: detail, Subject: tr.SourceRange().Ptr()}
}

// failed is the value of a variable or local value whose evaluation failed:
// unknown, so whatever uses it reports only a derived diagnostic.
func failed(ty cty.Type) cty.Value { return cty.UnknownVal(ty) }

// derivedExtra tags a diagnostic that only restates an error reported
// elsewhere.
type derivedExtra struct{}

// Derived reports whether d only restates an error reported elsewhere: an
// attribute whose value is unknown because a variable or local value it uses
// failed, or a required attribute read by a constructor after decoding
// reported it missing.
func Derived(d *hcl.Diagnostic) bool {
	_, ok := d.Extra.(derivedExtra)
	return ok
}

// DropDerived returns diags without its derived diagnostics when it holds
// another error (which the derived ones restate); otherwise diags itself.
func DropDerived(diags hcl.Diagnostics) hcl.Diagnostics {
	primary := false
	for _, d := range diags {
		primary = primary || (d.Severity == hcl.DiagError && !Derived(d))
	}
	if !primary {
		return diags
	}
	out := make(hcl.Diagnostics, 0, len(diags))
	for _, d := range diags {
		if !Derived(d) {
			out = append(out, d)
		}
	}
	return out
}

// shortCircuited evaluates on its own the right operand of every && and ||
// in expr. With unknown run-time roots HCL short-circuits those operators
// and drops the right operand's errors (an unknown function, a wrong
// argument), which would then fail for every record at run time. Operands
// that use a name bound inside the expression (a for variable) are skipped.
func shortCircuited(expr hcl.Expression, ctx *hcl.EvalContext, allowed []string) hcl.Diagnostics {
	syn, ok := expr.(hclsyntax.Expression)
	if !ok {
		return nil
	}
	var diags hcl.Diagnostics
	hclsyntax.VisitAll(syn, func(n hclsyntax.Node) hcl.Diagnostics {
		op, ok := n.(*hclsyntax.BinaryOpExpr)
		if !ok || (op.Op != hclsyntax.OpLogicalOr && op.Op != hclsyntax.OpLogicalAnd) {
			return nil
		}
		for _, tr := range hclsyntax.Variables(op.RHS) {
			if !slices.Contains(allowed, tr.RootName()) {
				return nil
			}
		}
		_, d := op.RHS.Value(ctx)
		diags = appendNew(diags, d)
		return nil
	})
	return diags
}

// appendNew appends the diagnostics of more that diags does not already
// hold (same summary and subject).
func appendNew(diags, more hcl.Diagnostics) hcl.Diagnostics {
	for _, d := range more {
		dup := false
		for _, e := range diags {
			if e.Summary == d.Summary && e.Subject != nil && d.Subject != nil && *e.Subject == *d.Subject {
				dup = true
			}
		}
		if !dup {
			diags = append(diags, d)
		}
	}
	return diags
}
