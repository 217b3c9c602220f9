package schema

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// quickTokens are the tokens quickScan makes of src, as "type text"
// lines, quoted literals left out (the lexer may split them); ok is false
// when quickScan leaves src to the lexer.
func quickTokens(src []byte) (toks []string, ok bool) {
	ok, _ = quickScan(src, func(t hclsyntax.TokenType, start, end int) bool {
		if t != hclsyntax.TokenQuotedLit {
			toks = append(toks, t.GoString()+" "+string(src[start:end]))
		}
		return true
	})
	return toks, ok
}

func lexerTokens(src []byte) []string {
	tokens, _ := hclsyntax.LexConfig(src, "x.hcl", hcl.InitialPos)
	var out []string
	for _, t := range tokens {
		if t.Type != hclsyntax.TokenQuotedLit && t.Type != hclsyntax.TokenEOF {
			out = append(out, t.Type.GoString()+" "+string(t.Bytes))
		}
	}
	return out
}

// sameAsLexer fails t when quickScan takes src but tokenises it otherwise
// than the HCL lexer, or says it is within the limits where the lexer's
// tokens are not.
func sameAsLexer(t *testing.T, name string, src []byte) bool {
	t.Helper()
	got, ok := quickTokens(src)
	if !ok {
		return false
	}
	want := lexerTokens(src)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("%s: token %d is %q, the lexer's %q", name, i, got[i], want[i])
			}
		}
		t.Fatalf("%s: %d tokens, the lexer makes %d", name, len(got), len(want))
	}
	if ok, _, _ := quickNesting(src, MaxNesting); ok {
		tokens, _ := hclsyntax.LexConfig(src, "x.hcl", hcl.InitialPos)
		n := newNestCounter(MaxNesting)
		for _, tok := range tokens {
			if r := n.add(tok.Type, tok.Bytes); r != nestOK {
				t.Fatalf("%s: the quick check passes what the lexer's tokens refuse (%d) at %s", name, r, tok.Range)
			}
		}
	}
	return true
}

// TestQuickScanSameAsLexer: on every configuration of the repository the
// quick scan makes the lexer's tokens, and it takes the usual ones (so
// validate does not lex twice).
func TestQuickScanSameAsLexer(t *testing.T) {
	var files []string
	for _, glob := range []string{"../examples/*/*.hcl", "../examples/*/*/*.hcl", "../cmd/pipeline/testdata/*/*.hcl", "../cmd/pipeline/testdata/*/*/*.hcl"} {
		m, _ := filepath.Glob(glob)
		files = append(files, m...)
	}
	if len(files) < 20 {
		t.Fatalf("only %d configuration files found", len(files))
	}
	taken := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if sameAsLexer(t, f, src) {
			taken++
		}
	}
	if taken < len(files)*3/4 {
		t.Errorf("the quick scan takes %d of %d files, want most", taken, len(files))
	}
	t.Logf("the quick scan takes %d of %d files", taken, len(files))
}

func TestQuickScanCases(t *testing.T) {
	for _, src := range quickSeeds {
		sameAsLexer(t, src, []byte(src))
	}
	for _, src := range []string{
		"x = \"a\nb\"", // a newline in a quoted string
		"x = <<EOT\nhi\nEOT\n",
		"x = \"$${a}\"",
		"x = \"%{~ if true}\"",
		"x = \"unterminated",
		"/* unterminated",
		"x = \"é\\é\"",
		"x = 1\r\n",
		"\xef\xbb\xbfx = 1",
	} {
		if _, ok := quickTokens([]byte(src)); ok {
			t.Errorf("%q: the quick scan takes what it should leave to the lexer", src)
		}
	}
}

var quickSeeds = []string{
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
// count over all of its tokens gives, also where the quick scan leaves it
// to the lexer (a heredoc first) and the error lies beyond a prefix.
func TestPrefixLexSameAsWhole(t *testing.T) {
	here := "x = <<EOT\nhi ${a}\nEOT\n"
	for _, src := range append(quickSeeds,
		here+"y = "+strings.Repeat("[", 300),
		here+"y = "+strings.Repeat("(1 + ", 1100),
		here+"y = 1\nz = 1e99999999\n",
		here+"y = <<-EOT\n  ${"+strings.Repeat("{a=", 260)+"\n  EOT\n",
		here+"y = [\n"+strings.Repeat("  1,\n", 500)+"]\n",
	) {
		prefixSameAsWhole(t, []byte(src))
	}
}

// FuzzQuickNesting: whatever the input, the quick scan either leaves it to
// the lexer or makes the lexer's tokens, and never passes what the
// lexer's tokens refuse.
func FuzzQuickNesting(f *testing.F) {
	for _, s := range quickSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		sameAsLexer(t, "input", src)
		prefixSameAsWhole(t, src)
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
