package configtest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclparse"
)

// TestConfigTestManyGivens: 20,000 given blocks at one time are applied
// one after another with one settle of the pipeline, not one settle
// each.
func TestConfigTestManyGivens(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), `
source "static" "s" {
  records = {}
}
sink "log" "out" {
  input = source.static.s
  path  = "/nonexistent-pipeline-test/out.log"
}
`)
	var b strings.Builder
	b.WriteString("test \"many\" {\n")
	const n = 20000
	for i := range n {
		fmt.Fprintf(&b, "  given \"source.static.s\" {\n    at  = \"0s\"\n    add = { \"k%d\" = %d }\n  }\n", i, i)
	}
	b.WriteString("  expect \"sink.log.out\" {\n    at   = \"1s\"\n    keys = [\"k0\"]\n  }\n}\n")
	tf := filepath.Join(dir, "many.test.hcl")
	writeFile(t, tf, b.String())
	tests, diags := ParseFile(hclparse.NewParser(), tf)
	if diags.HasErrors() || len(tests) != 1 {
		t.Fatalf("%d tests: %s", len(tests), diags.Error())
	}
	res, l := Run(context.Background(), testLoad, []string{filepath.Join(dir, "main.hcl")}, tests[0])
	if l.Diags.HasErrors() {
		t.Fatal(l.Diags.Error())
	}
	if len(res.Failures) != 1 {
		t.Errorf("%d failures, want the one expect's (k1 to k19999 held, not expected)", len(res.Failures))
	}
	if res.settles > 3 {
		t.Errorf("the pipeline settled %d times for %d givens at one time", res.settles, n)
	}
}
