package schema

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// nestSeeds are inputs of every kind of token the lexer makes, and over
// each limit.
var nestSeeds = []string{
	"locals {\n  x = [for v in var.l : v if v != \"\"]\n  y = { for k, v in local.m : k => v... }\n}\n",
	"x = a.b[*].c[0] + 1.5e3 - -2 * (3 % 4) / 5\n",
	"x = \"pre ${upper(\"in ${var.a} \\\" }\")} %{ if a }y%{ else }n%{ endif } $ % $x %y\"\n",
	"x = \"${ { a = 1 } }\"\n",
	"# comment ( [ {\n// another \"\n/* block\n ${ */ y = 1\n",
	"x = 1..2 + 1.e5 + 1e+ + 1e-3 + 1.2.3 + 07\n",
	"x = a-b-1 && c || !d ? e :: f : g >= h <= i == j != k => l; `'^&|\n",
	"x = \"é ünïcode ${\"ß\"}\" # ≠\n",
	"}}} x = ]]] ))) \"${}\"\n",
	"x = " + strings.Repeat("[", 300) + strings.Repeat("]", 300),
	"x = " + strings.Repeat("-", 300) + "1",
	"x = 1" + strings.Repeat(" + 1", 1100),
	"x = 1e99999999",
	"x = local.a[*][*][*]",
}

// TestPrefixLexSameAsWhole: lexed in prefixes, a file gets the error a
// count over all of its tokens gives, also where a heredoc comes first and
// the error lies beyond a prefix.
func TestPrefixLexSameAsWhole(t *testing.T) {
	here := "x = <<EOT\nhi ${a}\nEOT\n"
	for _, src := range append(nestSeeds,
		here+"y = "+strings.Repeat("[", 300),
		here+"y = "+strings.Repeat("(1 + ", 1100),
		here+"y = 1\nz = 1e99999999\n",
		here+"y = <<-EOT\n  ${"+strings.Repeat("{a=", 260)+"\n  EOT\n",
		here+"y = [\n"+strings.Repeat("  1,\n", 500)+"]\n",
	) {
		prefixSameAsWhole(t, []byte(src))
	}
}

// FuzzCheckNesting: whatever the input, the nesting check lexing it in
// prefixes finds the first error a count over all of the lexer's tokens
// finds, and a file it passes parses in pieces at its cuts into exactly
// what one parse of the whole makes (or is left to that parse).
func FuzzCheckNesting(f *testing.F) {
	for _, s := range nestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		prefixSameAsWhole(t, src)
		samePieces(t, "input", src, 1)
	})
}

// prefixSameAsWhole fails t when checkNesting, lexing src in prefixes of
// 1, 16 and 300 bytes, finds another first error than a count over all
// of the lexer's tokens.
func prefixSameAsWhole(t *testing.T, src []byte) {
	t.Helper()
	tokens, _ := hclsyntax.LexConfig(src, "x.hcl", hcl.InitialPos)
	n := newNestCounter(MaxNesting)
	want := ""
	for i, tok := range tokens {
		if i == MaxConfigTokens || n.add(tok.Type, tok.Bytes) != nestOK {
			want = tok.Range.String()
			break
		}
	}
	for _, prefix := range []int{1, 16, 300} {
		got := ""
		if diags, _ := checkNesting(src, "x.hcl", MaxNesting, prefix); diags.HasErrors() && diags[0].Summary != "Configuration file too large" {
			got = diags[0].Subject.String()
		}
		if got != want {
			t.Fatalf("lexed in prefixes of %d bytes, the first error is at %q; lexed whole, at %q", prefix, got, want)
		}
	}
}
