package schema

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"
)

// TestEvaluationBudget: locals that double a value forty times (a "billion
// laughs") stop with a diagnostic at the expression that outgrew the
// budget, instead of building gigabytes.
func TestEvaluationBudget(t *testing.T) {
	doubling := func(first, step string) string {
		var b strings.Builder
		b.WriteString("variable \"seed\" {\n  type    = list(string)\n  default = [\"x\", \"x\"]\n}\nlocals {\n")
		fmt.Fprintf(&b, "  v0 = %s\n", first)
		for i := 1; i <= 40; i++ {
			fmt.Fprintf(&b, "  v%d = %s\n", i, strings.ReplaceAll(step, "PREV", fmt.Sprintf("local.v%d", i-1)))
		}
		b.WriteString("}\n")
		return b.String()
	}
	tests := []struct {
		name, src, summary string
	}{
		{"concat", doubling("var.seed", "concat(PREV, PREV)"), "Error in function call"},
		{"template", doubling(`"xx"`, `"${PREV}${PREV}"`), "Value too large"},
		{"for", doubling(`["x"]`, `[for x in PREV : [x, x]]`), "Value too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := NewLoader().ParseSource("laughs.hcl", []byte(tt.src), Options{Environ: []string{}})
			if !diags.HasErrors() {
				t.Fatal("no error")
			}
			d := diags[0]
			if diff := cmp.Diff(tt.summary, d.Summary); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
			if d.Subject == nil || d.Subject.Start.Line < 7 || !strings.Contains(d.Detail, "limit") {
				t.Errorf("diagnostic %s at %v, want one about the limit at a local", d.Detail, d.Subject)
			}
		})
	}
}

func TestEvaluationBudgetAllowsLargeValues(t *testing.T) {
	src := "locals {\n  a = [for i in range : i]\n}\n"
	src = strings.Replace(src, "range", "["+strings.Repeat("1,", 20_000)+"1]", 1)
	if _, diags := NewLoader().ParseSource("large.hcl", []byte(src), Options{Environ: []string{}}); diags.HasErrors() {
		t.Fatal(diags)
	}
}

// TestSealedBudgetBoundsValuesNotTheirTotal: once compiled, a run's
// functions are called per record for as long as it lasts: the total
// budget no longer applies (it used to fail every call after 256 MiB),
// the bound on one value still does.
func TestSealedBudgetBoundsValuesNotTheirTotal(t *testing.T) {
	cfg, diags := NewLoader().ParseSource("run.hcl", []byte("locals {\n  a = 1\n}\n"), Options{Environ: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	upper := cfg.Ctx.Functions["upper"]
	const size = 8 << 20
	big := cty.StringVal(strings.Repeat("x", size))
	call := func() error { _, err := upper.Call([]cty.Value{big}); return err }
	calls := MaxEvalSize/size + 2
	var err error
	for i := 0; i < calls && err == nil; i++ {
		err = call()
	}
	if err == nil || !strings.Contains(err.Error(), "together exceed") {
		t.Fatalf("unsealed: %v, want the total budget's error", err)
	}
	cfg.Seal()
	for range calls {
		if err := call(); err != nil {
			t.Fatalf("sealed: %v", err)
		}
	}
	huge := cty.StringVal(strings.Repeat("x", MaxValueSize+1))
	if _, err := cfg.Ctx.Functions["lower"].Call([]cty.Value{huge}); err == nil {
		t.Fatal("sealed: a value over the per-value limit was built")
	}
}
