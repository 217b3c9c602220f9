package extract

import (
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/schema"
)

// TestSensitiveMarksCarryThrough checks that a value computed from a
// sensitive part of an object keeps the mark (for_each over a sensitive
// collection included), that other values carry none, and that a key
// computed from a sensitive value is refused (keys are shown everywhere).
func TestSensitiveMarksCarryThrough(t *testing.T) {
	secret := schema.MarkSensitive(cty.StringVal("Q"))
	o := node.Record{Key: "shop/a", Value: cty.ObjectVal(map[string]cty.Value{
		"name":   cty.StringVal("a"),
		"token":  secret,
		"tokens": schema.MarkSensitive(cty.TupleVal([]cty.Value{cty.StringVal("x"), cty.StringVal("y")})),
	})}
	for _, tc := range []struct {
		name, body string
		sensitive  map[string]bool // key -> value marked
		errors     float64
	}{
		{name: "derived value", body: "key = object.name\nvalue = { t = upper(object.token), n = object.name }",
			sensitive: map[string]bool{"a": true}},
		{name: "plain value", body: "key = object.name\nvalue = object.name",
			sensitive: map[string]bool{"a": false}},
		{name: "element of a sensitive list", body: "for_each = [0, 1]\nkey = \"${object.name}-${each.value}\"\nvalue = object.tokens[each.key]",
			sensitive: map[string]bool{"a-0": true, "a-1": true}},
		{name: "for_each over a sensitive list", body: "for_each = object.tokens\nkey = \"k\"\nvalue = each.value",
			sensitive: map[string]bool{"k": true}},
		{name: "sensitive key", body: "key = object.token", sensitive: map[string]bool{}, errors: 1},
		{name: "key from a sensitive for_each", body: "for_each = object.tokens\nkey = each.value", sensitive: map[string]bool{}, errors: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := start(t, objects, tc.body)
				r.reset(o)
				got := map[string]bool{}
				for k, v := range r.out.State() {
					got[k] = schema.IsSensitive(v)
				}
				if d := cmp.Diff(tc.sensitive, got); d != "" {
					t.Errorf("marked (-want +got):\n%s", d)
				}
				if got := metric(t, r.reg, "pipeline_transform_expression_errors_total"); got != tc.errors {
					t.Errorf("expression errors = %v, want %v", got, tc.errors)
				}
			})
		})
	}
}

// TestSensitiveJSONPathReadsWhole: a jsonpath() template computed from a
// secret is not parsed into the projection (which the graph shows); the
// transform reads the traversal's subtree whole instead.
func TestSensitiveJSONPathReadsWhole(t *testing.T) {
	tr := nodetest.MustBuild(t, Spec(), "input = source.kubernetes.pods\nkey = \"k\"", objects).Transform.(*Transform)
	ctx := tr.ctx.NewChild()
	ctx.Functions = tr.ctx.Functions
	ctx.Variables = map[string]cty.Value{"var": cty.ObjectVal(map[string]cty.Value{
		"jp": schema.MarkSensitive(cty.StringVal("{.metadata.secretname}"))})}
	tr.ctx = ctx
	expr, diags := hclsyntax.ParseExpression([]byte("jsonpath(object.spec, var.jp)"), "x.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	tr.key = expr
	p, _ := tr.ObjectPaths()
	got := strings.Join(p.List(), " ")
	if got != ".spec" {
		t.Errorf("paths %q, want the subtree spec read whole", got)
	}
}
