package schema

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// The check at load runs each for's body once, however large the data
// it loops over: nested loops over a local of 2,000 items call the
// body's function once, not 4 million times; and it still finds what
// is wrong inside a loop's body, with the loop's variable typed from
// the collection.
func TestCheckExprLoopsOnce(t *testing.T) {
	big := make([]cty.Value, 2000)
	for i := range big {
		big[i] = cty.StringVal("x")
	}
	calls := 0
	count := function.New(&function.Spec{
		Params: []function.Parameter{{Name: "v", Type: cty.DynamicPseudoType, AllowUnknown: true, AllowDynamicType: true}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func([]cty.Value, cty.Type) (cty.Value, error) {
			calls++
			return cty.StringVal(""), nil
		},
	})
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{"local": cty.ObjectVal(map[string]cty.Value{
			"big":  cty.TupleVal(big),
			"objs": cty.TupleVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"port": cty.NumberIntVal(80)})}),
		})},
		Functions: map[string]function.Function{"count": count, "upper": Functions("", nil)["upper"], "join": Functions("", nil)["join"]},
	}
	for _, c := range []struct{ src, want string }{
		{`%{ for a in local.big }%{ for b in local.big }${count(b)}%{ endfor }%{ endfor }`, ""},
		{`${join("", [for a in local.big : join("", [for b in local.big : count(b)])])}`, ""},
		{`%{ for p in local.objs }${p.nope}%{ endfor }`, "Unsupported attribute"},
		{`%{ for a in local.big }${upper(a, 1)}%{ endfor }`, "Too many function arguments"},
		{`%{ for r in records }${upper(r.key, 1)}%{ endfor }`, "Too many function arguments"},
	} {
		calls = 0
		expr, diags := hclsyntax.ParseTemplate([]byte(c.src), "t.tmpl", hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		diags = CheckExpr(expr, ctx, []string{"records"})
		if got := diagSummaries(diags); (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: diagnostics %q, want %q", c.src, got, c.want)
		}
		if c.want == "" && calls > 1 {
			t.Errorf("%s: the check called the loop's body %d times, want once", c.src, calls)
		}
		// The expression is as written again: a render loops for real.
		_ = hclsyntax.VisitAll(expr.(hclsyntax.Node), func(n hclsyntax.Node) hcl.Diagnostics {
			if f, ok := n.(*hclsyntax.ForExpr); ok {
				if _, ok := f.CollExpr.(*symbolicFor); ok {
					t.Errorf("%s: a for's collection is still checked once after the check", c.src)
				}
			}
			return nil
		})
	}
}

func diagSummaries(diags hcl.Diagnostics) string {
	var out []string
	for _, d := range diags {
		out = append(out, d.Summary+": "+d.Detail)
	}
	return strings.Join(out, "; ")
}
