package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// validateDiags is what validate says about dir, as the server must
// publish it for name: message "summary: detail" at the subject's range.
func validateDiags(t *testing.T, dir, name string) []protocol.Diagnostic {
	t.Helper()
	l := loadWith([]string{dir}, schema.Options{}, registry())
	var out []protocol.Diagnostic
	for _, d := range l.diags {
		if d.Subject == nil || d.Subject.Filename != name {
			continue
		}
		sev := protocol.DiagnosticSeverityError
		if d.Severity == hcl.DiagWarning {
			sev = protocol.DiagnosticSeverityWarning
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		// ASCII files: a column is the byte offset in the line.
		r := protocol.Range{Start: pos(d.Subject.Start.Line-1, d.Subject.Start.Column-1), End: pos(d.Subject.End.Line-1, d.Subject.End.Column-1)}
		out = append(out, protocol.Diagnostic{Range: r, Severity: sev, Source: "pipeline", Message: msg})
	}
	return out
}

// TestLSPDiagnostics: as the buffer changes, the server publishes exactly
// validate's diagnostics (errors and warnings, same ranges and texts) for
// every file of the directory, with unsaved text overlaying the disk, and
// clears them once fixed.
func TestLSPDiagnostics(t *testing.T) {
	dir := copyExample(t, "flagship")
	main := filepath.Join(dir, "main.hcl")
	good := readString(t, main)
	c := startLSP(t)
	c.open(main, good)
	c.waitDiags(main, func(d []protocol.Diagnostic) bool { return len(d) == 0 })

	// An error and a warning, typed but not saved: validate of the same
	// text on disk must say the same.
	bad := strings.Replace(good, `type        = "hash"`, `type        = "hashh"`, 1)
	bad = strings.Replace(bad, `pin         = "/sys/fs/bpf/pipeline/allowed"`, `pin         = "/tmp/allowed"`, 1)
	c.change(main, bad)
	got := c.waitDiags(main, func(d []protocol.Diagnostic) bool { return len(d) >= 2 })
	if err := os.WriteFile(main, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	want := validateDiags(t, dir, main)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diagnostics differ from validate's (-validate +lsp):\n%s", diff)
	}
	if len(want) < 2 || !slices.ContainsFunc(want, func(d protocol.Diagnostic) bool { return d.Severity == protocol.DiagnosticSeverityWarning }) {
		t.Errorf("want an error and a warning, got %v", want)
	}

	// Another file of the directory, on disk only, referring to a node
	// that does not exist: its diagnostics are published under its URI.
	other := filepath.Join(dir, "extra.hcl")
	if err := os.WriteFile(other, []byte("sink \"log\" \"x\" {\n  input = transform.nope.nope\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.change(main, good)
	gotOther := c.waitDiags(other, func(d []protocol.Diagnostic) bool { return len(d) > 0 })
	if err := os.WriteFile(main, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(validateDiags(t, dir, other), gotOther); diff != "" {
		t.Errorf("extra.hcl diagnostics (-validate +lsp):\n%s", diff)
	}
	c.waitDiags(main, func(d []protocol.Diagnostic) bool { return len(d) == 0 })

	// Fixed: the other file's diagnostics are cleared.
	if err := os.Remove(other); err != nil {
		t.Fatal(err)
	}
	c.change(main, good+"\n")
	c.waitDiags(other, func(d []protocol.Diagnostic) bool { return len(d) == 0 })
}

// TestLSPDiagnosticsUTF16: columns count UTF-16 code units, not bytes.
func TestLSPDiagnosticsUTF16(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "main.hcl")
	src := "locals {\n  a = { \"é😀\" = 1, b = nope.x }\n}\n"
	if err := os.WriteFile(name, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startLSP(t)
	c.open(name, src)
	got := c.waitDiags(name, func(d []protocol.Diagnostic) bool { return len(d) > 0 })
	// `nope` starts after `  a = { "é😀" = 1, b = `: 10 ASCII characters,
	// é (1 unit), 😀 (2 units), then `" = 1, b = ` (11).
	want := protocol.Range{Start: pos(1, 23), End: pos(1, 29)}
	if got[0].Range != want {
		t.Errorf("range %v, want %v (%s)", got[0].Range, want, got[0].Message)
	}
}

func labels(items []protocol.CompletionItem) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Label)
	}
	return out
}

func (c *lspClient) complete(name string, p protocol.Position) []protocol.CompletionItem {
	var list protocol.CompletionList
	c.call(protocol.MethodTextDocumentCompletion, protocol.CompletionParams{TextDocumentPositionParams: protocol.TextDocumentPositionParams{
		TextDocument: protocol.TextDocumentIdentifier{URI: uri.File(name)}, Position: p}}, &list)
	return list.Items
}

// TestLSPCompletion: block kinds, node types with their summary,
// attributes (required first, present ones left out), nested blocks,
// enum values, references, variables, locals, record and object fields,
// functions with signatures.
func TestLSPCompletion(t *testing.T) {
	dir := copyExample(t, "flagship")
	main := filepath.Join(dir, "main.hcl")
	src := readString(t, main)
	src = strings.Replace(src, "sink \"ebpf_map\" \"allowed\" {\n", "sink \"ebpf_map\" \"allowed\" {\n  \n", 1)
	src += "\nlocals {\n  base = \"10.0.0.0/8\"\n}\n\nsink \"\n"
	c := startLSP(t)
	// The check of the file as it was opened builds the nodes that say
	// which fields their objects have; they stay while edits do not parse.
	c.open(main, readString(t, main))
	c.waitDiags(main, func([]protocol.Diagnostic) bool { return true })
	c.change(main, src)
	reg := registry()

	t.Run("kinds", func(t *testing.T) {
		got := labels(c.complete(main, pos(strings.Count(src, "\n")-1, 0)))
		for _, k := range []string{"source", "transform", "sink", "variable", "locals", "cluster"} {
			if !slices.Contains(got, k) {
				t.Errorf("top level: %q missing from %v", k, got)
			}
		}
	})
	t.Run("types", func(t *testing.T) {
		items := c.complete(main, pos(strings.Count(src, "\n")-1, 6))
		if diff := cmp.Diff(reg.Types(node.KindSink), labels(items)); diff != "" {
			t.Errorf("sink types (-want +got):\n%s", diff)
		}
		spec, _ := reg.Lookup(node.KindSink, "ebpf_map")
		for _, it := range items {
			if it.Label == "ebpf_map" && it.Detail != spec.Summary {
				t.Errorf("ebpf_map detail %q, want the summary %q", it.Detail, spec.Summary)
			}
		}
	})
	t.Run("attributes", func(t *testing.T) {
		items := c.complete(main, posOf(t, src, "sink \"ebpf_map\" \"allowed\" {\n  \n", 31))
		got := labels(items)
		present := []string{"input", "pin", "type", "max_entries", "key", "value"}
		spec, _ := reg.Lookup(node.KindSink, "ebpf_map")
		for _, a := range spec.FullBody().Attrs {
			if n := a.Info().Name; slices.Contains(present, n) == slices.Contains(got, n) {
				t.Errorf("attribute %q: present %v, offered %v", n, slices.Contains(present, n), slices.Contains(got, n))
			}
		}
		for _, it := range items {
			if it.Label == "on_mismatch" && (it.Detail != `string, one of "error", "recreate" = "error"` || it.Documentation == nil) {
				t.Errorf("on_mismatch: detail %q, doc %v", it.Detail, it.Documentation)
			}
		}
	})
	t.Run("required first", func(t *testing.T) {
		body := "sink \"ebpf_map\" \"m\" {\n  \n}\n"
		name := filepath.Join(dir, "req.hcl")
		c.open(name, body)
		items := c.complete(name, pos(1, 2))
		slices.SortFunc(items, func(a, b protocol.CompletionItem) int { return strings.Compare(a.SortText, b.SortText) })
		if items[0].Label != "pin" || !strings.Contains(items[0].Detail, "required") {
			t.Errorf("first item %q %q, want the required pin", items[0].Label, items[0].Detail)
		}
		if !slices.Contains(labels(items), "key") || !slices.Contains(labels(items), "value") {
			t.Errorf("nested blocks missing: %v", labels(items))
		}
		body = "sink \"ebpf_map\" \"m\" {\n  key {\n    \n  }\n}\n"
		c.change(name, body)
		got := labels(c.complete(name, pos(2, 4)))
		if !slices.Contains(got, "byte_order") || !slices.Contains(got, "field") || slices.Contains(got, "pin") {
			t.Errorf("inside key: %v", got)
		}
	})
	for _, tc := range []struct {
		name, line string
		col        int
		want       []string
	}{
		{"enum", "  type        = ", -1, []string{"hash", "lpm_trie", "percpu_array"}},
		{"enum in string", "  type        = \"", -1, []string{"hash", "lru_hash"}},
		{"reference kinds", "  input       = ", -1, []string{"source", "transform", "transform.extract.pod_ips"}},
		{"reference types", "  input       = transform.", -1, []string{"debounce", "extract", "grace_period"}},
		{"reference names", "  input       = transform.extract.", -1, []string{"pod_ips"}},
		{"variables", "  interval = var.", -1, []string{"grace", "kubeconfig"}},
		{"locals", "  interval = local.", -1, []string{"base"}},
		{"functions", "  interval = ", -1, []string{"cidrhost", "lower", "var", "local"}},
		{"object fields", "  where    = object.", -1, []string{"metadata", "spec", "status"}},
		{"object nested", "  where    = object.status.", -1, []string{"phase", "podIP", "podIPs"}},
		{"record fields", "  subject   = record.", -1, []string{"key", "value"}},
		{"record value fields", "  subject   = record.value.", -1, []string{"namespace", "pod"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each line is typed in the block its attribute belongs to.
			anchor := map[string]string{"  type        = ": "  max_entries", "  type        = \"": "  max_entries",
				"  input       = ": "  max_entries", "  input       = transform.": "  max_entries", "  input       = transform.extract.": "  max_entries",
				"  interval = var.": "  max_wait", "  interval = local.": "  max_wait", "  interval = ": "  max_wait",
				"  where    = object.": "  for_each", "  where    = object.status.": "  for_each",
				"  subject   = record.": "  jetstream", "  subject   = record.value.": "  jetstream"}[tc.line]
			i := strings.Index(src, anchor)
			text := src[:i] + tc.line + "\n" + src[i:]
			c.change(main, text)
			items := c.complete(main, posOf(t, text, tc.line+"\n", len(tc.line)))
			got := labels(items)
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("%q missing from %v", w, got)
				}
			}
			for _, it := range items {
				if it.Label == "cidrhost" && it.Detail != "cidrhost(prefix string, hostnum number) string" {
					t.Errorf("cidrhost signature %q", it.Detail)
				}
			}
		})
	}
}

// TestLSPCompletionAfterPause completes after the server indexed a text
// that does not parse (a pause in typing, a hover): the parser dropped the
// block being typed in, and its declaration comes from the document's last
// parse without errors; a block added since (the locals) still counts.
func TestLSPCompletionAfterPause(t *testing.T) {
	main := filepath.Join(copyExample(t, "flagship"), "main.hcl")
	src := readString(t, main)
	c := startLSP(t)
	c.open(main, src)
	c.waitDiags(main, func([]protocol.Diagnostic) bool { return true })
	src += "\nlocals {\n  base = \"10.0.0.0/8\"\n}\n\nsink \"\n"
	j := strings.Index(src, "  max_entries")
	paused := src[:j] + "  type        = \"\n" + src[j:] // the parser skips the blocks after it
	i := strings.Index(src, "  jetstream")
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"  subject   = record.value.", []string{"namespace", "pod"}},
		{"  subject   = local.", []string{"base"}},
	} {
		c.change(main, paused)
		var hover json.RawMessage
		c.at(protocol.MethodTextDocumentHover, main, posOf(t, paused, "  type        = \"\n", 2), &hover) // indexes the broken text
		text := src[:i] + tc.line + "\n" + src[i:]
		c.change(main, text)
		got := labels(c.complete(main, posOf(t, text, tc.line+"\n", len(tc.line))))
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("%s: %q missing from %v", tc.line, w, got)
			}
		}
	}
}

// TestLSPCompletionFilesFields completes the fields of a files source's
// data, read from the files themselves: CSV columns after record.value.
// in the extract reading it and after item. in its own key, and the
// fields of the Pods its selector keeps after object. for format
// "kubernetes". A line is typed before its anchor, or in its place.
func TestLSPCompletionFilesFields(t *testing.T) {
	c := startLSP(t)
	for _, tc := range []struct {
		example, anchor, line string
		replace               bool
		want                  []string
	}{
		{"files-formats", "  key   = record.key", "  where = record.value.", false, []string{"ip", "name", "zone"}},
		{"files-formats", "  key    = item.ip", "  key    = item.", true, []string{"ip", "name", "zone"}},
		{"files-allowlist", "  key   = object.status.podIP", "  where = object.", false, []string{"apiVersion", "kind", "metadata", "status"}},
		{"files-allowlist", "  key   = object.status.podIP", "  where = object.status.", false, []string{"phase", "podIP", "podIPs"}},
	} {
		t.Run(tc.example+" "+tc.line, func(t *testing.T) {
			main := filepath.Join(copyExample(t, tc.example), "main.hcl")
			src := readString(t, main)
			c.open(main, src) // the check builds the nodes that read the files
			c.waitDiags(main, func([]protocol.Diagnostic) bool { return true })
			i := strings.Index(src, tc.anchor)
			if i < 0 {
				t.Fatalf("%q not in %s", tc.anchor, main)
			}
			text := src[:i] + tc.line + "\n" + src[i:]
			if tc.replace {
				text = src[:i] + tc.line + src[i+len(tc.anchor):]
			}
			c.change(main, text)
			got := labels(c.complete(main, posOf(t, text, tc.line+"\n", len(tc.line))))
			if len(got) != len(tc.want) {
				t.Errorf("offered %v, want %v", got, tc.want)
			}
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("%q missing from %v", w, got)
				}
			}
		})
	}
}
