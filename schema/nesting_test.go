package schema

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheckNesting(t *testing.T) {
	deep := 5_000
	tests := []struct {
		name    string
		src     string
		summary string // "" when the source is accepted
		line    int
	}{
		{"parentheses", "locals {\n  x = " + strings.Repeat("(", deep) + "1" + strings.Repeat(")", deep) + "\n}", "Configuration nested too deeply", 2},
		{"brackets", "locals {\n  x = " + strings.Repeat("[", deep) + "1" + strings.Repeat("]", deep) + "\n}", "Configuration nested too deeply", 2},
		{"interpolations", "locals {\n  x = \"" + strings.Repeat("${", deep) + "1" + strings.Repeat("}", deep) + "\"\n}", "Configuration nested too deeply", 2},
		{"unary", "locals {\n  x = " + strings.Repeat("-", deep) + "1\n}", "Configuration nested too deeply", 2},
		{"operator chain", "locals {\n  x = 1" + strings.Repeat("+1", deep) + "\n}", "Expression too long", 2},
		{"conditional chain", "locals {\n  x = " + strings.Repeat("true ? 1 : ", deep) + "1\n}", "Expression too long", 2},
		{"at the limit", "locals {\n  x = " + strings.Repeat("(", MaxNesting-2) + "1" + strings.Repeat(")", MaxNesting-2) + "\n}", "", 0},
		{"brackets in a string", "locals {\n  x = \"" + strings.Repeat("(", deep) + "\"\n}", "", 0},
		{"brackets in a comment", "# " + strings.Repeat("[", deep) + "\nlocals {}\n", "", 0},
		{"long list", "locals {\n  x = [" + strings.Repeat("1+1,\n", deep) + "]\n}", "", 0},
		// 1,000,000 tokens: 6 before the list elements and commas, 4 after (EOF is one)
		{"tokens at the limit", "locals {\n  x = [" + strings.Repeat("1,", (MaxConfigTokens-10)/2) + "]\n}", "", 0},
		{"too many tokens", "locals {\n  x = [" + strings.Repeat("1,", 500_000) + "]\n}", "Configuration file too long", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			diags := CheckNesting([]byte(tt.src), "deep.hcl")
			var got string
			var line int
			if len(diags) > 0 {
				got, line = diags[0].Summary, diags[0].Subject.Start.Line
			}
			if diff := cmp.Diff(tt.summary+"@"+strconv.Itoa(tt.line), got+"@"+strconv.Itoa(line)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseSourceNesting: the loader refuses deep input with a diagnostic
// instead of overflowing the parser's stack (a fatal, unrecoverable error).
func TestParseSourceNesting(t *testing.T) {
	src := "locals {\n  x = " + strings.Repeat("(", 100_000) + "1" + strings.Repeat(")", 100_000) + "\n}"
	cfg, diags := NewLoader().ParseSource("deep.hcl", []byte(src), Options{Environ: []string{}})
	if cfg != nil || !diags.HasErrors() || diags[0].Summary != "Configuration nested too deeply" {
		t.Fatalf("got config %v, diagnostics %v", cfg != nil, diags)
	}
	if got := diags[0].Subject.String(); !strings.HasPrefix(got, "deep.hcl:2,") {
		t.Errorf("subject %s, want deep.hcl:2,…", got)
	}
}
