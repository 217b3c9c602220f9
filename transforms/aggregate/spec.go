package aggregate

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// Attributes of transform "aggregate".
var (
	letAttr = schema.Expr("let", "records", "let").
		Doc("Named values computed once per evaluation, as an object constructor `{ NAME = EXPRESSION, ... }`: " +
			"each may use `records` and `let.NAME` of the entries written before it. Build the lookup tables of a join " +
			"here, with a `for` expression (`{ for r in records : r.value.name => r.value if r.value.kind == \"service\" }`, " +
			"or its grouping mode `...`), so that `for_each`, `key` and `value` look records up instead of looping over " +
			"`records` for every element.").
		Example(`{ services = { for r in records : r.key => r.value if r.value.kind == "service" } }`)
	forEachAttr = schema.Expr("for_each", "records", "let").Required().
			Doc("A list, set, map or object computed from `records` (every input record, a list of `{ key, value }` " +
			"objects sorted by key) and `let`: one record is made per element, with `each.key` (the index, or the map key) " +
			"and `each.value` in scope of key and value. Null or empty yields no record.").
		Example(`[for r in records : r.value if r.value.kind == "route"]`)
	keyAttr = schema.Expr("key", "records", "let", "each").Required().
		Doc("The record's key: a string, or a number (converted to its decimal text). A null or empty key skips that " +
			"element. When two elements yield one key, the last wins.").
		Example(`"${each.value.namespace}/${each.value.name}"`)
	valueAttr = schema.Expr("value", "records", "let", "each").Default(nil, "{}").
			Doc("The record's value, of any type. Absent: an empty object.").
			Example(`{ backend = each.value.service, found = contains(keys(let.services), each.value.service) }`)
)

// Spec declares transform "aggregate".
func Spec() node.Spec {
	return node.Spec{
		Kind:    node.KindTransform,
		Type:    "aggregate",
		Summary: "Computes records from the whole input collection at once: joins, counts, conditions over several records.",
		Doc: "Where transform \"extract\" sees one object at a time, aggregate sees every record of its input " +
			"(usually the fan-in of several extracts, each record's value carrying a `kind`): `records` is the list of " +
			"`{ key, value }` objects sorted by key, as a template sink sees it. On every change of the input it evaluates " +
			"`let`, then `for_each`, then `key` and `value` per element, and publishes only the records that changed. " +
			"In scope: `records`, `let`, `each` (in key and value), `var`, `local` and every function.\n\n" +
			"It emits nothing before its input has synced (a join over part of the input would be wrong: a route whose " +
			"Service was not listed yet would look broken), and is synced after its first evaluation that succeeds. " +
			"An evaluation that fails as a whole (`let` or `for_each`) keeps the previous output, logs the error, counts " +
			"it in pipeline_transform_expression_errors_total and shows the node degraded until an evaluation succeeds. " +
			"An error in one element's key or value skips that element, logged and counted, and the others go on.\n\n" +
			"An evaluation after a change evaluates again only what the change affects, with a result equal to " +
			"evaluating everything: a `let` entry or `for_each` whose inputs (`records`, the `let` entries it names) " +
			"did not change keeps its value; a `for` expression (at the top of an entry, or inside function calls and " +
			"tuples there) remembers its condition, key and value per element, an element of `records` by its key, any " +
			"other by its key or index while its value is equal; and each element of `for_each` keeps its record while " +
			"it and the `let` entries its key and value name are unchanged. So keep lookup tables in `let` as `for` " +
			"expressions over `records` (`{ for r in records : ... if r.value.kind == \"service\" }`), each with a " +
			"condition that drops the other kinds: a change of a record that such a table drops, before and after, " +
			"leaves the table as it was without a pass over `records`. An element whose `key` or `value` names a " +
			"`let` entry that changed is evaluated again, as is everything that reads `let` as a whole, calls " +
			"`file`, or is bound to an unknown or sensitive element. A first evaluation costs the whole input; put a " +
			"debounce in front when the input changes in bursts.",
		Body:         schema.Block{Attrs: []schema.Attribute{letAttr, forEachAttr, keyAttr, valueAttr}},
		Output:       node.Records,
		Accepts:      []node.DataType{node.Records},
		NewTransform: newTransform,
	}
}

// letItem is one named entry of let, evaluated in the order written.
type letItem struct {
	name string
	expr hcl.Expression
}

func newTransform(b node.Build) (node.Transform, hcl.Diagnostics) {
	t := &Transform{address: b.Address, ctx: b.Content.Ctx}
	var diags hcl.Diagnostics
	let := letAttr.Read(b.Content, &diags)
	t.forEach = forEachAttr.Read(b.Content, &diags)
	t.key = keyAttr.Read(b.Content, &diags)
	t.value = valueAttr.Read(b.Content, &diags)
	if let != nil {
		items, d := letItems(let)
		t.let = items
		diags = append(diags, d...)
	}
	return t, diags
}

// letItems reads let's object constructor: static names, each referring
// only to the entries before it.
func letItems(e hcl.Expression) ([]letItem, hcl.Diagnostics) {
	obj, ok := e.(*hclsyntax.ObjectConsExpr)
	if !ok {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid let",
			Detail:  "let must be an object constructor, { NAME = EXPRESSION, ... }, so that each entry is computed once and may use the ones before it.",
			Subject: e.Range().Ptr()}}
	}
	var diags hcl.Diagnostics
	seen := map[string]bool{}
	items := make([]letItem, 0, len(obj.Items))
	for _, it := range obj.Items {
		name := hcl.ExprAsKeyword(it.KeyExpr)
		if name == "" {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid let name",
				Detail: "Each entry of let is named by an identifier (services = ...), not an expression.", Subject: it.KeyExpr.Range().Ptr()})
			continue
		}
		if seen[name] {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate let name",
				Detail: "let." + name + " is defined twice; rename one.", Subject: it.KeyExpr.Range().Ptr()})
			continue
		}
		for _, tr := range it.ValueExpr.Variables() {
			if tr.RootName() != "let" || len(tr) < 2 {
				continue
			}
			a, ok := tr[1].(hcl.TraverseAttr)
			if ok && seen[a.Name] {
				continue
			}
			d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Reference to a later let entry",
				Detail:  "An entry of let may use only the entries written before it. Move this entry below the one it uses.",
				Subject: tr.SourceRange().Ptr()}
			if !ok {
				d.Summary, d.Detail = "Invalid let reference", "Refer to an entry of let by name: let.NAME."
			}
			diags = append(diags, d)
		}
		seen[name] = true
		items = append(items, letItem{name: name, expr: it.ValueExpr})
	}
	return items, diags
}
