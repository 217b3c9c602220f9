package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"
)

func (c *lspClient) at(method, name string, p protocol.Position, result any) {
	c.t.Helper()
	c.call(method, map[string]any{"textDocument": map[string]any{"uri": uri.File(name)}, "position": p,
		"context": map[string]any{"includeDeclaration": true}}, result)
}

// TestLSPHover: an attribute's type, default and doc; a reference's
// target block; a function's signature; a node type's summary.
func TestLSPHover(t *testing.T) {
	dir := copyExample(t, "flagship")
	main := filepath.Join(dir, "main.hcl")
	src := readString(t, main)
	c := startLSP(t)
	c.open(main, src)
	for _, tc := range []struct {
		name string
		at   protocol.Position
		want []string
	}{
		{"attribute", posOf(t, src, "max_entries = 65536", 3), []string{"**max_entries** `number`", "default: `65536`"}},
		{"reference", posOf(t, src, "input    = transform.extract.pod_ips", 30), []string{`transform "extract" "pod_ips" {`, "main.hcl:28:1"}},
		{"variable", posOf(t, src, "delay = var.grace", 13), []string{`variable "grace" {`}},
		{"function", posOf(t, src, `replace(record.key`, 2), []string{"replace(", "string"}},
		{"node type", posOf(t, src, `sink "ebpf_map"`, 8), []string{"Keeps a pinned kernel BPF map"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h protocol.Hover
			c.at(protocol.MethodTextDocumentHover, main, tc.at, &h)
			for _, w := range tc.want {
				if !strings.Contains(h.Contents.Value, w) {
					t.Errorf("hover %q lacks %q", h.Contents.Value, w)
				}
			}
		})
	}
}

// TestLSPNavigation: go to definition and find references for nodes,
// variables and locals, across the files of the directory; the outline.
func TestLSPNavigation(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.hcl")
	b := filepath.Join(dir, "b.hcl")
	srcA := "variable \"net\" {\n  default = \"10.0.0.0/8\"\n}\n\nlocals {\n  base = var.net\n}\n\nsource \"static\" \"nets\" {\n  records = { (local.base) = { id = 1 } }\n}\n"
	srcB := "transform \"filter\" \"f\" {\n  input = source.static.nets\n  where = record.key != local.base\n}\n\nsink \"log\" \"out\" {\n  input = transform.filter.f\n}\n"
	c := startLSP(t)
	c.open(a, srcA)
	c.open(b, srcB)
	loc := func(name string, line, c1, c2 int) protocol.Location {
		return protocol.Location{URI: uri.File(name), Range: protocol.Range{Start: pos(line, c1), End: pos(line, c2)}}
	}
	var defs []protocol.Location
	c.at(protocol.MethodTextDocumentDefinition, b, pos(1, 25), &defs) // source.static.nets
	if want := []protocol.Location{{URI: uri.File(a), Range: protocol.Range{Start: pos(8, 0), End: pos(10, 1)}}}; !cmp.Equal(want, defs) {
		t.Errorf("definition of the source: %v", defs)
	}
	c.at(protocol.MethodTextDocumentDefinition, b, pos(2, 28), &defs) // local.base
	if want := []protocol.Location{loc(a, 5, 2, 16)}; !cmp.Equal(want, defs) {
		t.Errorf("definition of the local: %v", defs)
	}
	c.at(protocol.MethodTextDocumentDefinition, a, pos(5, 13), &defs) // var.net
	if want := []protocol.Location{{URI: uri.File(a), Range: protocol.Range{Start: pos(0, 0), End: pos(2, 1)}}}; !cmp.Equal(want, defs) {
		t.Errorf("definition of the variable: %v", defs)
	}
	var refs []protocol.Location
	c.at(protocol.MethodTextDocumentReferences, a, pos(5, 4), &refs) // on "base" in locals
	want := []protocol.Location{loc(a, 5, 2, 6), loc(a, 9, 15, 25), loc(b, 2, 24, 34)}
	if diff := cmp.Diff(want, refs); diff != "" {
		t.Errorf("references of local.base (-want +got):\n%s", diff)
	}
	c.at(protocol.MethodTextDocumentReferences, b, pos(6, 28), &refs) // transform.filter.f
	want = []protocol.Location{loc(b, 0, 19, 22), loc(b, 6, 10, 28)}
	if diff := cmp.Diff(want, refs); diff != "" {
		t.Errorf("references of the filter (-want +got):\n%s", diff)
	}

	var syms []protocol.DocumentSymbol
	c.call(protocol.MethodTextDocumentDocumentSymbol, protocol.DocumentSymbolParams{TextDocument: protocol.TextDocumentIdentifier{URI: uri.File(a)}}, &syms)
	var names []string
	for _, s := range syms {
		names = append(names, s.Name)
		for _, ch := range s.Children {
			names = append(names, "  "+ch.Name)
		}
	}
	if diff := cmp.Diff([]string{"var.net", "  default", "locals", "  base", "source.static.nets", "  records"}, names); diff != "" {
		t.Errorf("outline (-want +got):\n%s", diff)
	}
}

// TestLSPFormatting: the edit makes the buffer what `pipeline fmt` writes.
func TestLSPFormatting(t *testing.T) {
	name := filepath.Join(t.TempDir(), "main.hcl")
	src := "locals {\n  a = 1\n  long_name = \"é😀\"\n}\n"
	c := startLSP(t)
	c.open(name, src)
	var edits []protocol.TextEdit
	c.call(protocol.MethodTextDocumentFormatting, protocol.DocumentFormattingParams{TextDocument: protocol.TextDocumentIdentifier{URI: uri.File(name)}}, &edits)
	want, err := format(name, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(edits) != 1 || edits[0].NewText != string(want) || edits[0].Range.End != pos(4, 0) {
		t.Errorf("edits %v, want the whole buffer replaced by %q", edits, want)
	}
	c.change(name, string(want))
	c.call(protocol.MethodTextDocumentFormatting, protocol.DocumentFormattingParams{TextDocument: protocol.TextDocumentIdentifier{URI: uri.File(name)}}, &edits)
	if len(edits) != 0 {
		t.Errorf("a formatted buffer got edits %v", edits)
	}
}
