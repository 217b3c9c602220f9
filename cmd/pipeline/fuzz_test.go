package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipeline/pipeline/cmd/pipeline/view"
	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/schema"
)

// fuzzEdgeCases seed FuzzCompile besides every corpus file.
var fuzzEdgeCases = []string{
	"",
	"\x00",
	"{",
	"}",
	"source",
	`source "static" "x" {`,
	`source "static" "x" { records = { (var.x) = 1 } }`,
	`sink "log" "x" { input = source.static.x.y.z[0] }`,
	`sink "log" "x" { input = sink.log.x }`,
	"locals {\n a = local.a\n b = local.a + local.b\n}",
	`locals { x = cidrsubnet("::/0", 128, 1) }`,
	`locals { x = cidrhost("0.0.0.0/0", -1) }`,
	`locals { x = cidrsubnet("10.0.0.0/8", 200, 1e40) }`,
	`locals { x = format("%*d", 5, 1) }`,
	`locals { x = [cidrhost("10.0.0.0/8", 1/0), cidrsubnet("10.0.0.0/8", 8, -1/0), cidrhost("::/0", 1.5)] }`,
	`locals { x = [substr("abc", 1/0, 1), format("%d", 1/0), tostring(1/0), 1 % 0] }`,
	`locals { x = jsondecode("[[[[[[[[[[1]]]]]]]]]]") }`,
	`locals { x = try(local.y, 1) }`,
	`variable "v" { type = map(list(object({a=number}))) default = {} }`,
	`variable "v" { type = any default = null }`,
	"locals {\n x = <<EOT\n${\nEOT\n}",
	"\ufeffsource \"static\" \"bom\" { records = {} }",
	`source "static" "ünïcödé" { records = { "🙂" = "🙂" } }`,
	// Nesting around the limit (schema.MaxNesting): the parser recurses
	// once per level, and the fuzzer mutates these deeper.
	"locals { x = " + strings.Repeat("(", 255) + "1" + strings.Repeat(")", 255) + " }",
	"locals { x = " + strings.Repeat("[", 300) + "1" + strings.Repeat("]", 300) + " }",
	"locals { x = \"" + strings.Repeat("${", 200) + "1" + strings.Repeat("}", 200) + "\" }",
	"locals { x = " + strings.Repeat("{a=", 200) + "1" + strings.Repeat("}", 200) + " }",
	"locals { x = " + strings.Repeat("!", 300) + "true }",
	"locals { x = 1" + strings.Repeat("+1", 1100) + " }",
	"locals { x = " + strings.Repeat("true ? 1 : ", 999) + "1 }",
	"locals { x = [for a in [1]: " + strings.Repeat("[for b in [1]: ", 100) + "1" + strings.Repeat("]", 101) + " }",
	"sink \"nats\" \"n\" {\n input = source.static.s\n url = \"x\"\n subject = \"${record.key[0]}\"\n}\nsource \"static\" \"s\" { records = {} }",
}

// FuzzCompile feeds arbitrary text through the parser, the compiler and
// both diagnostic views: none may panic, whatever the input. It is seeded
// with every corpus file, the examples and the edge cases above.
//
//	go test ./cmd/pipeline -run '^$' -fuzz FuzzCompile -fuzztime 20000x
func FuzzCompile(f *testing.F) {
	for _, dir := range []string{filepath.Join("testdata", "invalid"), filepath.Join("testdata", "valid")} {
		for _, c := range corpusCases(f, dir) {
			for _, file := range caseFiles(f, c) {
				src, err := os.ReadFile(file)
				if err != nil {
					f.Fatal(err)
				}
				f.Add(src)
			}
		}
	}
	examples, _ := filepath.Glob(filepath.Join("..", "..", "examples", "*", "*.hcl"))
	for _, file := range examples {
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	for _, s := range fuzzEdgeCases {
		f.Add([]byte(s))
	}
	reg := registry()
	f.Fuzz(func(t *testing.T, src []byte) {
		l := schema.NewLoader()
		// An empty environment keeps env() and PIPELINE_VAR_ deterministic.
		cfg, diags := l.ParseSource(filepath.Join("testdata", "valid", "fuzz.hcl"), src, schema.Options{Environ: []string{}})
		if cfg != nil {
			_, d := graph.Compile(cfg, reg)
			diags = append(diags, d...)
		}
		for _, d := range diags {
			// cty turns a panic inside a function into an error carrying a
			// Go stack trace: for us that is a crash all the same.
			if strings.Contains(d.Detail, "panic in function implementation") && strings.Contains(d.Detail, "goroutine ") {
				t.Fatalf("a function panicked: %s", d.Detail)
			}
		}
		view.WriteDiagsText(io.Discard, l.Files(), diags)
		if err := view.WriteJSON(io.Discard, view.ValidateJSON(l.Files(), diags)); err != nil {
			t.Fatalf("render JSON: %v", err)
		}
	})
}
