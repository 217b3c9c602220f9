package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/cmd/pipeline/view"
	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// FuzzGrammar writes configurations from the registry's own schema (every
// node type, its attributes by type, its nested blocks) and mutates them
// structurally: one expression nested deep in one of many kinds, chained
// long, given a huge literal, or the configuration given many blocks. Each
// input is parsed and compiled (the graph's fingerprint included) under a
// time and an allocation bound; a panic, a stack overflow (a crash of the
// worker), or going over either bound fails. Byte-level fuzzing
// (FuzzCompile) seldom builds such shapes; these are the ones that crashed
// or hung pipeline before (500,000 [*] splats, 1e9999999, nested %{if}).
//
//	go test ./cmd/pipeline -run '^$' -fuzz FuzzGrammar -fuzztime 2000x
func FuzzGrammar(f *testing.F) {
	for i := range uint64(24) {
		f.Add(i, []byte{byte(i), byte(i * 7), byte(i * 13)})
	}
	reg := registry()
	f.Fuzz(func(t *testing.T, seed uint64, ops []byte) {
		src := generateConfig(reg, seed, ops)
		checkBounded(t, src, reg)
	})
}

// Bounds per input: what a hostile configuration may cost before the
// loader refuses it. Generous for a loaded machine; a hang or a runaway
// build goes far beyond them.
const (
	grammarTimeBound  = 20 * time.Second
	grammarAllocBound = 2 << 30
)

// checkBounded parses and compiles src within the bounds and returns the
// diagnostics.
func checkBounded(t *testing.T, src string, reg *node.Registry) hcl.Diagnostics {
	t.Helper()
	allocs := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(allocs)
	before := allocs[0].Value.Uint64()
	done := make(chan hcl.Diagnostics, 1)
	go func() {
		l := schema.NewLoader()
		cfg, diags := l.ParseSource(filepath.Join("testdata", "valid", "grammar.hcl"), []byte(src), schema.Options{Environ: []string{}})
		if cfg != nil {
			_, d := graph.Compile(cfg, reg)
			diags = append(diags, d...)
		}
		view.WriteDiagsText(io.Discard, l.Files(), diags)
		done <- diags
	}()
	var diags hcl.Diagnostics
	select {
	case diags = <-done:
	case <-time.After(grammarTimeBound):
		t.Fatalf("parse and compile took more than %s on:\n%.2000s", grammarTimeBound, src)
	}
	metrics.Read(allocs)
	if a := allocs[0].Value.Uint64() - before; a > grammarAllocBound {
		t.Fatalf("parse and compile allocated %d MiB (bound %d MiB) on:\n%.2000s", a>>20, grammarAllocBound>>20, src)
	}
	return diags
}

// generateConfig writes a configuration: a static source and one to four
// other nodes of random types with their attributes, then applies the
// mutations ops chooses.
func generateConfig(reg *node.Registry, seed uint64, ops []byte) string {
	g := &gen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), ops: ops}
	var b strings.Builder
	b.WriteString("variable \"tok\" {\n  type      = string\n  sensitive = true\n  default   = \"s3cret\"\n}\n")
	fmt.Fprintf(&b, "source \"static\" \"s\" {\n  records = { %s = %s }\n}\n", g.expr(0), g.expr(0))
	specs := reg.All()
	for i := range 1 + g.rng.IntN(4) {
		sp := specs[g.rng.IntN(len(specs))]
		if sp.Kind == node.KindSource && sp.Type == "static" {
			continue
		}
		fmt.Fprintf(&b, "%s %q \"n%d\" {\n", sp.Kind, sp.Type, i)
		g.body(&b, sp.FullBody(), 1)
		b.WriteString("}\n")
	}
	if g.op() == 7 { // many blocks
		n := g.size()
		for i := range n {
			fmt.Fprintf(&b, "locals {\n  l%d = %s\n}\n", i, g.expr(0))
		}
	}
	return b.String()
}

type gen struct {
	rng     *rand.Rand
	ops     []byte
	mutated bool
}

// op takes the next mutation choice (0-9), or 0 when ops is used up.
func (g *gen) op() byte {
	if len(g.ops) == 0 {
		return 0
	}
	o := g.ops[0] % 10
	g.ops = g.ops[1:]
	return o
}

// size is how long a chain or how deep a nesting is: around the limits
// and far beyond them. Not 500,000: go test's fuzzing worker gives up on
// an input after 10 s, which a shape of that size can take on a busy
// machine; TestGrammarBounds checks those shapes on every go test.
func (g *gen) size() int {
	sizes := []int{3, 255, 257, 1001, 20_000, 100_000}
	return sizes[g.rng.IntN(len(sizes))]
}

func (g *gen) body(b *strings.Builder, blk schema.Block, depth int) {
	ind := strings.Repeat("  ", depth)
	for _, a := range blk.Attrs {
		info := a.Info()
		if !info.Required && g.rng.IntN(2) == 0 {
			continue
		}
		fmt.Fprintf(b, "%s%s = %s\n", ind, info.Name, g.value(info))
	}
	for _, bt := range blk.Blocks {
		if !bt.Required && g.rng.IntN(2) == 0 {
			continue
		}
		b.WriteString(ind + bt.Name)
		for range bt.Labels {
			fmt.Fprintf(b, " \"l%d\"", g.rng.IntN(3))
		}
		b.WriteString(" {\n")
		g.body(b, bt.Body, depth+1)
		b.WriteString(ind + "}\n")
	}
}

// value writes a value for an attribute from its declared type, its
// example, or an expression.
func (g *gen) value(info *schema.AttrInfo) string {
	switch {
	case info.Type == "reference":
		return "source.static.s"
	case info.Type == "list(reference)":
		return "[source.static.s]"
	case info.Example != "" && g.rng.IntN(2) == 0:
		return info.Example
	case info.Type == "expression":
		return g.expr(0)
	case info.Type == "duration":
		return `"1s"`
	case info.Type == "bool":
		return "true"
	case info.Type == "number":
		return g.number()
	case strings.HasPrefix(info.Type, "list"):
		return "[" + g.expr(0) + "]"
	}
	return g.expr(0)
}

func (g *gen) number() string {
	nums := []string{"0", "1", "1.5", "-1", "255", "65536", "18446744073709551616", "1e308", "1e-308"}
	return nums[g.rng.IntN(len(nums))]
}

// expr writes an expression; the first time the mutation choice says so,
// it is deep, long or huge.
func (g *gen) expr(depth int) string {
	if !g.mutated {
		if e, ok := g.mutate(); ok {
			g.mutated = true
			return e
		}
	}
	leaves := []string{`"a"`, g.number(), "true", "null", "var.tok", `upper("x")`, `"${var.tok}-x"`, "record.key", "record.value", `[1, 2]`, `{ a = 1 }`}
	if depth > 2 || g.rng.IntN(3) > 0 {
		return leaves[g.rng.IntN(len(leaves))]
	}
	forms := []string{"(%s)", "[%s]", "{ k = %s }", `"${%s}"`, "upper(%s)", "%s + 1", "true ? %s : null", "[for x in [1] : %s]", "!%s", "-%s"}
	return fmt.Sprintf(forms[g.rng.IntN(len(forms))], g.expr(depth+1))
}

// mutate writes one structural mutation, chosen by the next op.
func (g *gen) mutate() (string, bool) {
	n := g.size()
	switch g.op() {
	case 1: // deep nesting of one expression kind
		kinds := [][2]string{{"(", ")"}, {"[", "]"}, {"{a=", "}"}, {`"${`, `}"`}, {"upper(", ")"}, {"[for x in [1] : ", "]"}, {"-", ""}, {"!", ""}}
		k := kinds[g.rng.IntN(len(kinds))]
		return strings.Repeat(k[0], n) + "1" + strings.Repeat(k[1], n), true
	case 2: // long chains
		chains := []string{" + 1", ".*", "[*]", "[0]", ".a", " ? 1 : 1", " == 1"}
		return "[1]" + strings.Repeat(chains[g.rng.IntN(len(chains))], n), true
	case 3: // huge literals
		lits := []string{strings.Repeat("9", n*10), "1e" + strings.Repeat("9", min(n, 12)), "1e-" + strings.Repeat("9", min(n, 12)), `"` + strings.Repeat("a", n*10) + `"`}
		return lits[g.rng.IntN(len(lits))], true
	case 4: // functions over huge or deep data
		fns := []string{`tonumber("1e9999999")`, `jsondecode("1e9999999")`, `jsondecode("` + strings.Repeat("[", n) + strings.Repeat("]", n) + `")`,
			`tonumber("` + strings.Repeat("9", n) + `")`, "1/0", "-1/0", `format("%` + fmt.Sprint(n) + `d", 1)`}
		return fns[g.rng.IntN(len(fns))], true
	case 5: // nested template directives, under the nesting limit and over it
		n = []int{3, 250, 255, 257, 100_000}[g.rng.IntN(5)]
		return "<<EOT\n" + strings.Repeat("%{if true}", n) + "x" + strings.Repeat("%{endif}", n) + "\nEOT\n", true
	case 6: // many elements
		return "[" + strings.Repeat("1,", n) + "]", true
	}
	return "", false
}

// TestGrammarShapes runs the shapes FuzzGrammar found slow through the same
// bounds on every go test: a records list of 500,000 numbers (refused
// after one lexing pass: too many tokens), one of 100,000 (compiled in
// linear time: the fingerprint wrote each number through big.Float's
// shortest-decimal search, 13 s of CPU for 500,000), template directives
// nested 250 deep (accepted) and 255 deep (over the nesting limit with the
// blocks around them), and for expressions nested 500,000 deep (refused at
// level 257 without lexing the rest of the file), also behind a heredoc,
// which the quick scan leaves to the lexer.
func TestGrammarShapes(t *testing.T) {
	// Give the heap back: a child process the later tests start (fork and
	// exec) counts this process's resident pages in its peak RSS.
	t.Cleanup(debug.FreeOSMemory)
	reg := registry()
	static := func(records string) string {
		return "source \"static\" \"s\" {\n  records = " + records + "\n}\nsink \"log\" \"l\" {\n  input = source.static.s\n}\n"
	}
	ifs := func(n int) string {
		return "{ a = <<EOT\n" + strings.Repeat("%{if true}", n) + "x" + strings.Repeat("%{endif}", n) + "\nEOT\n }"
	}
	for _, tt := range []struct {
		name, src, summary string // summary of the first error, "" for none
	}{
		{"500,000 numbers", static("{ a = [" + strings.Repeat("1,", 500_000) + "] }"), "Configuration file too long"},
		{"100,000 numbers", static("{ a = [" + strings.Repeat("1,", 100_000) + "] }"), ""},
		{"250 nested if", static(ifs(250)), ""},
		{"255 nested if", static(ifs(255)), "Configuration nested too deeply"},
		{"a heredoc, then 16 MB of [", "locals {\n  h = <<EOT\nx\nEOT\n}\n" + static(strings.Repeat("[", schema.MaxConfigBytes-200)), "Configuration nested too deeply"},
		{"500,000 nested for", static("{ " + strings.Repeat("[for x in [1] : ", 500_000) + "1" + strings.Repeat("]", 500_000) + " = 1 }"), "Configuration nested too deeply"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			diags := checkBounded(t, tt.src, reg)
			got := ""
			if diags.HasErrors() {
				got = diags.Errs()[0].(*hcl.Diagnostic).Summary
			}
			if got != tt.summary {
				t.Errorf("first error %q, want %q (%v)", got, tt.summary, diags)
			}
		})
	}
}
