package filter

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// whereAttr is the filter's only attribute.
var whereAttr = schema.Expr("where", "record").Required().
	Doc("Condition on each record, with `record.key` (a string) and `record.value` in scope. Records for which it is true pass; false or null drops them. " +
		"An expression error drops the record, logs it with its key and counts it in pipeline_transform_expression_errors_total.").
	Example(`record.value.namespace != "kube-system"`)

// Spec declares transform "filter".
func Spec() node.Spec {
	return node.Spec{
		Kind:    node.KindTransform,
		Type:    "filter",
		Summary: "Keeps the records for which an expression is true.",
		Doc: "A record that stops matching (its value changed) is deleted downstream, and one that starts matching " +
			"is added. Besides `record`, the expression may use `var`, `local` and every function. " +
			"Use try() for fields that may be missing: `try(record.value.labels.tier, \"\") == \"web\"`.",
		Body:   schema.Block{Attrs: []schema.Attribute{whereAttr}},
		Output: node.SameAsInput,
		NewTransform: func(b node.Build) (node.Transform, hcl.Diagnostics) {
			e, _, diags := whereAttr.Get(b.Content)
			return &Transform{address: b.Address, where: e, ctx: b.Content.Ctx}, diags
		},
	}
}
