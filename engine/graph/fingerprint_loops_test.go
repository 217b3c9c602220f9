package graph

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// An expression that loops over a local is fingerprinted as written with
// the values it reads, not run: two nested loops over 2,000 items would
// call the body 4 million times; and a change of the local still changes
// the fingerprint.
func TestFingerprintDoesNotRunLoops(t *testing.T) {
	calls := 0
	count := function.New(&function.Spec{
		Params: []function.Parameter{{Name: "v", Type: cty.DynamicPseudoType}},
		Type:   function.StaticReturnType(cty.String),
		Impl:   func([]cty.Value, cty.Type) (cty.Value, error) { calls++; return cty.StringVal(""), nil },
	})
	ctxOf := func(first string) *hcl.EvalContext {
		big := make([]cty.Value, 2000)
		for i := range big {
			big[i] = cty.StringVal("x")
		}
		big[0] = cty.StringVal(first)
		return &hcl.EvalContext{Variables: map[string]cty.Value{"local": cty.ObjectVal(map[string]cty.Value{"big": cty.TupleVal(big)})},
			Functions: map[string]function.Function{"count": count}}
	}
	expr, diags := hclsyntax.ParseTemplate([]byte(`%{ for a in local.big }%{ for b in local.big }${count(b)}%{ endfor }%{ endfor }`), "t", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	p := &printer{}
	text1, refs1, _ := p.expr(expr, ctxOf("x"))
	if calls != 0 {
		t.Errorf("the fingerprint ran the loop's body %d times", calls)
	}
	text2, refs2, _ := p.expr(expr, ctxOf("y"))
	if text1 == text2 && len(refs1) == len(refs2) && (len(refs1) == 0 || refs1[0] == refs2[0]) {
		t.Errorf("a changed local leaves the fingerprint as it was: %q %v", text1, refs1)
	}
}
