package kobject

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/pipeline/pipeline/schema"
)

// The label selector is written either as one string or as repeated
// structured blocks; both declare the name "selector".
var (
	SelectorAttr = schema.String("selector").
			Doc("Label selector in kubectl syntax: `app=web,env in (prod,staging),!legacy`. Empty selects everything. Use this or selector blocks, not both.").
			Example(`"app=backend,env in (prod,staging)"`)
	requirementKey = schema.String("key").Required().
			Doc("Label key, such as `app` or `app.kubernetes.io/name`.")
	requirementOperator = schema.Enum("operator", operators...).Required().
				Doc("One of `=`, `==`, `!=` (exactly one value), `in`, `notin` (one or more values), `exists`, `!exists` (no values).")
	requirementValues = schema.StringList("values").
				Doc("Values the operator compares with.").Example(`["prod", "staging"]`)
	// SelectorBlock is one requirement of a structured label selector; an
	// object must match every block.
	SelectorBlock = schema.Nested("selector", schema.Block{Attrs: []schema.Attribute{
		requirementKey, requirementOperator, requirementValues}}).Repeated().
		WithDoc("One requirement of the label selector; an object must match every block. Write one block per requirement, on several lines: `key = \"env\"`, `operator = \"in\"`, `values = [\"prod\", \"staging\"]`.")
	FieldSelectorAttr = schema.String("field_selector").
				Doc("Field selector evaluated by the API server: `status.phase=Running,spec.nodeName=node-1`. Which fields are supported depends on the resource.").
				Example(`"status.phase=Running"`)
)

var operators = []string{"=", "==", "!=", "in", "notin", "exists", "!exists"}

var operatorOf = map[string]selection.Operator{
	"=": selection.Equals, "==": selection.DoubleEquals, "!=": selection.NotEquals,
	"in": selection.In, "notin": selection.NotIn, "exists": selection.Exists, "!exists": selection.DoesNotExist,
}

// DecodeSelector reads the label selector, from the selector string or the
// selector blocks. It returns labels.Everything() when neither is set.
func DecodeSelector(c *schema.Content) (labels.Selector, hcl.Diagnostics) {
	blocks := SelectorBlock.Get(c)
	if SelectorAttr.Has(c) {
		s, rng, diags := SelectorAttr.Get(c)
		if len(blocks) > 0 {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Conflicting label selectors",
				Detail:  "Write the label selector either as a selector string or as selector blocks, not both.",
				Subject: blocks[0].Range.Ptr()})
		}
		if diags.HasErrors() {
			return labels.Everything(), diags
		}
		sel, err := labels.Parse(s)
		if err != nil {
			return labels.Everything(), hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid label selector",
				Detail:  fmt.Sprintf("%s. Write requirements such as \"app=web\", \"env in (prod,staging)\" or \"!legacy\", separated by commas.", err),
				Subject: rng.Ptr()}}
		}
		return sel, nil
	}
	var diags hcl.Diagnostics
	sel := labels.NewSelector()
	for _, b := range blocks {
		req, d := decodeRequirement(b)
		diags = append(diags, d...)
		if req != nil {
			sel = sel.Add(*req)
		}
	}
	return sel, diags
}

func decodeRequirement(c *schema.Content) (*labels.Requirement, hcl.Diagnostics) {
	key, keyRange, diags := requirementKey.Get(c)
	op := requirementOperator.Read(c, &diags)
	values, valuesRange, d := requirementValues.Get(c)
	diags = append(diags, d...)
	if diags.HasErrors() {
		return nil, diags
	}
	desc := describeRequirement(key, op, values)
	fail := func(rng hcl.Range, detail string) hcl.Diagnostics {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid label selector requirement",
			Detail: fmt.Sprintf("The requirement %s is invalid: %s", desc, detail), Subject: rng.Ptr()}}
	}
	switch {
	case (op == "exists" || op == "!exists") && len(values) > 0:
		return nil, fail(valuesRange, fmt.Sprintf("%q takes no values; remove values.", op))
	case (op == "in" || op == "notin") && len(values) == 0:
		return nil, fail(c.Range, fmt.Sprintf("%q needs at least one value in values.", op))
	case (op == "=" || op == "==" || op == "!=") && len(values) != 1:
		return nil, fail(c.Range, fmt.Sprintf("%q compares with exactly one value; use \"in\" or \"notin\" for several.", op))
	}
	req, err := labels.NewRequirement(key, operatorOf[op], values)
	if err != nil {
		rng := valuesRange
		if strings.Contains(err.Error(), "key:") || strings.HasPrefix(err.Error(), "key") {
			rng = keyRange
		}
		return nil, fail(rng, err.Error()+".")
	}
	return req, nil
}

func describeRequirement(key, op string, values []string) string {
	s := fmt.Sprintf("{ key = %q, operator = %q", key, op)
	if len(values) > 0 {
		q := make([]string, len(values))
		for i, v := range values {
			q[i] = fmt.Sprintf("%q", v)
		}
		s += ", values = [" + strings.Join(q, ", ") + "]"
	}
	return s + " }"
}

// DecodeFieldSelector reads field_selector; it returns fields.Everything()
// when unset.
func DecodeFieldSelector(c *schema.Content) (fields.Selector, hcl.Diagnostics) {
	s, rng, diags := FieldSelectorAttr.Get(c)
	if diags.HasErrors() || s == "" {
		return fields.Everything(), diags
	}
	sel, err := fields.ParseSelector(s)
	if err != nil {
		return fields.Everything(), hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid field selector",
			Detail:  fmt.Sprintf("%s. Write requirements such as \"status.phase=Running\" or \"metadata.name!=x\", separated by commas.", err),
			Subject: rng.Ptr()}}
	}
	return sel, nil
}
