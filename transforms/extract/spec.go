package extract

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// Attributes of transform "extract".
var (
	whereAttr = schema.Expr("where", "object", "record").Default(nil, "true").
			Doc("Condition on the input object; an object for which it is false or null yields no record. It is evaluated once per object, before for_each.").
			Example(`try(object.status.phase, "") == "Running"`)
	forEachAttr = schema.Expr("for_each", "object", "record").Default(nil, "null").
			Doc("A list, set, map or object: one record is made per element, with `each.key` (the index, or the map key) and `each.value` in scope of key and value. A null or empty collection yields no record. Absent: one record per object, and `each` does not exist.").
			Example(`try(object.status.podIPs, [])`)
	keyAttr = schema.Expr("key", "object", "record", "each").Required().
		Doc("The record's key: a string, or a number (converted to its decimal text). A null or empty key skips that record (counted in pipeline_transform_skipped_records_total). When one object yields the same key twice, the last element wins.").
		Example(`each.value.ip`)
	valueAttr = schema.Expr("value", "object", "record", "each").Default(nil, "{}").
			Doc("The record's value, of any type. Absent: an empty object, for sinks that need only the key (an allow-list).").
			Example(`{ pod = object.metadata.name, namespace = object.metadata.namespace }`)
)

// Spec declares transform "extract".
func Spec() node.Spec {
	return node.Spec{
		Kind:    node.KindTransform,
		Type:    "extract",
		Summary: "Turns each input object into zero or more records with HCL expressions.",
		Doc: "The expressions run for every input object. In scope: `object` (the input record's value: the " +
			"Kubernetes object of a kubernetes or files source, the record's value otherwise), `each` (with for_each), " +
			"`var`, `local`, every function, and `jsonpath(object, TEMPLATE)`.\n\n" +
			"`jsonpath(value, \"{.status.podIP}\")` evaluates a client-go (kubectl) JSONPath template: it returns the " +
			"matched value (a string for a string field), a list when the template matches several values " +
			"(`{.status.podIPs[*].ip}`), and null when nothing matches. A template with text outside the braces, or with " +
			"`{range}`, returns the printed text, as `kubectl -o jsonpath` does. `*` and `..` visit a map's keys in sorted order " +
			"(`{.metadata.labels.*}` lists the values by label name), so one object always gives one answer. A literal template is checked when the " +
			"configuration loads. Missing object fields are errors in plain expressions: write `try(object.spec.nodeName, \"\")` " +
			"or use jsonpath() where a field may be absent.\n\n" +
			"An expression error on one object (a missing attribute, a key of the wrong type) is logged with the object's key " +
			"and counted in pipeline_transform_expression_errors_total; that object yields nothing until it changes, " +
			"and every other object goes on.\n\n" +
			"Several objects may yield the same key (two hostNetwork pods share their node's IP): the record exists while " +
			"any of them yields it, and its value is the one yielded by the object with the smallest key, so deleting one " +
			"pod never removes an IP another pod still uses.",
		Body:         schema.Block{Attrs: []schema.Attribute{whereAttr, forEachAttr, keyAttr, valueAttr}},
		Output:       node.Records,
		Accepts:      []node.DataType{node.Objects, node.Records},
		NewTransform: newTransform,
	}
}

// newTransform reads the expressions through their handles, with jsonpath()
// in the evaluation context so literal templates are checked now.
func newTransform(b node.Build) (node.Transform, hcl.Diagnostics) {
	c := *b.Content
	c.Ctx = withJSONPath(b.Content.Ctx)
	t := &Transform{address: b.Address, ctx: c.Ctx}
	defer func() { t.usesRecord = refersTo("record", t.where, t.forEach, t.key, t.value) }()
	var diags hcl.Diagnostics
	for _, x := range []struct {
		attr *schema.Attr[hcl.Expression]
		dst  *hcl.Expression
	}{{whereAttr, &t.where}, {forEachAttr, &t.forEach}, {keyAttr, &t.key}, {valueAttr, &t.value}} {
		*x.dst = x.attr.Read(&c, &diags)
	}
	if t.forEach == nil {
		diags = append(diags, eachWithoutForEach(t.key)...)
		diags = append(diags, eachWithoutForEach(t.value)...)
	}
	return t, diags
}

// eachWithoutForEach reports references to each in an expression of a block
// that has no for_each: each would not exist at run time.
func eachWithoutForEach(e hcl.Expression) hcl.Diagnostics {
	if e == nil {
		return nil
	}
	var diags hcl.Diagnostics
	for _, tr := range e.Variables() {
		if tr.RootName() != "each" {
			continue
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Reference to each without for_each",
			Detail: "each exists only in a block that sets for_each. Add for_each = <a list or map>, " +
				"or refer to object instead.",
			Subject: tr.SourceRange().Ptr(),
		})
	}
	return diags
}

// refersTo reports whether any of exprs refers to the root variable name.
func refersTo(name string, exprs ...hcl.Expression) bool {
	for _, e := range exprs {
		if e == nil {
			continue
		}
		for _, tr := range e.Variables() {
			if tr.RootName() == name {
				return true
			}
		}
	}
	return false
}
