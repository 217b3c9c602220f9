package extract

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

var (
	whereAttr = schema.Expr("where", "object").
			Doc("Condition on the object; objects for which it is false yield nothing. Default: every object.").
			Example(`object.status.phase == "Running"`)
	forEachAttr = schema.Expr("for_each", "object").
			Doc("A list or map; one record is made per element, with `each.key` and `each.value` in scope. Default: one record per object.").
			Example(`object.status.podIPs`)
	keyAttr = schema.Expr("key", "object", "each").Required().
		Doc("The record's key; a string (numbers are converted). A null or empty key skips that record.").
		Example(`each.value.ip`)
	valueAttr = schema.Expr("value", "object", "each").
			Doc("The record's value, of any type. Default: an empty object.").
			Example(`{ pod = object.metadata.name, namespace = object.metadata.namespace }`)
)

// Spec declares transform "extract".
func Spec() node.Spec {
	return node.Spec{
		Kind:    node.KindTransform,
		Type:    "extract",
		Summary: "Turns each input object into zero or more records with HCL expressions.",
		Doc: "In scope: `object` (the input record's value: a Kubernetes object for kubernetes and files sources), " +
			"`each` (with for_each), `var`, `local`, every function, and `jsonpath(object, \"{.status.podIP}\")` " +
			"(client-go JSONPath; null when the path is missing, a list when it matches several values). " +
			"An expression error on one object is logged with the object's key and counted in " +
			"pipeline_transform_expression_errors_total; that object yields nothing and the pipeline goes on. " +
			"When several objects yield the same key, the record lives while any of them yields it and takes " +
			"the value from the object with the smallest key.",
		Body:    schema.Block{Attrs: []schema.Attribute{whereAttr, forEachAttr, keyAttr, valueAttr}},
		Output:  node.Records,
		Accepts: []node.DataType{node.Objects, node.Records},
		New:     newTransform,
	}
}

func newTransform(b node.Build) (any, hcl.Diagnostics) {
	ctx := withJSONPath(b.Content.Ctx)
	c := *b.Content
	c.Ctx = ctx
	t := &Transform{address: b.Address, ctx: ctx}
	var diags hcl.Diagnostics
	for _, x := range []struct {
		attr *schema.Attr[hcl.Expression]
		dst  *hcl.Expression
	}{{whereAttr, &t.where}, {forEachAttr, &t.forEach}, {keyAttr, &t.key}, {valueAttr, &t.value}} {
		e, _, d := x.attr.Get(&c)
		diags = append(diags, d...)
		*x.dst = e
	}
	return t, diags
}
