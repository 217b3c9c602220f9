package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.lsp.dev/protocol"
)

// TestLSPConfigTestFile: a config test file (*.test.hcl) open in the
// editor gets what `pipeline test` says of it before running (its blocks,
// its values, the addresses it names), completion of its blocks and
// attributes and of the configuration's sources and sinks, hover from the
// declarations, and go to definition from a given's label to the source.
func TestLSPConfigTestFile(t *testing.T) {
	dir := copyExample(t, "flagship")
	name := filepath.Join(dir, "allowlist.test.hcl")
	good := readString(t, name)
	c := startLSP(t)
	c.open(name, good)
	c.waitDiags(name, func(d []protocol.Diagnostic) bool { return len(d) == 0 })

	t.Run("diagnostics", func(t *testing.T) {
		bad := strings.Replace(good, `at    = "0s"`, `at    = "soon"`, 1)
		bad = strings.Replace(bad, `expect "sink.ebpf_map.allowed" {
    at   = "1050ms"`, `expect "sink.ebpf_map.alowed" {
    at   = "1050ms"`, 1)
		bad = strings.Replace(bad, `keys = ["10.0.0.7", "fd00::7"]`, `keys = ["10.0.0.7", "fd00::7"]
    bogus = 1`, 1)
		c.change(name, bad)
		got := c.waitDiags(name, func(d []protocol.Diagnostic) bool { return len(d) > 0 })
		var msgs []string
		for _, d := range got {
			msgs = append(msgs, d.Message)
		}
		for _, want := range []string{"Invalid time", "Unsupported argument"} {
			if !slices.ContainsFunc(msgs, func(m string) bool { return strings.HasPrefix(m, want) }) {
				t.Errorf("no %q among %q", want, msgs)
			}
		}
		// Addresses are checked once the blocks are sound.
		bad = strings.Replace(strings.Replace(bad, `at    = "soon"`, `at    = "0s"`, 1), "\n    bogus = 1", "", 1)
		c.change(name, bad)
		got = c.waitDiags(name, func(d []protocol.Diagnostic) bool {
			return len(d) == 1 && strings.HasPrefix(d[0].Message, "Unknown sink")
		})
		if want := posOf(t, bad, `expect "sink.ebpf_map.alowed"`, 0); got[0].Range.Start != want || !strings.Contains(got[0].Message, "sink.ebpf_map.allowed") {
			t.Errorf("diagnostic at %v, want %v naming the sinks: %s", got[0].Range.Start, want, got[0].Message)
		}
		c.change(name, good)
		c.waitDiags(name, func(d []protocol.Diagnostic) bool { return len(d) == 0 })
	})

	for _, tc := range []struct {
		name, text, after string
		want, not         []string
	}{
		{"top level", good + "\n\n", good + "\n", []string{"test"}, []string{"source", "sink", "variable"}},
		{"in a test", strings.Replace(good, "test \"a running pod's IP is allowed after the debounce\" {\n",
			"test \"a running pod's IP is allowed after the debounce\" {\n  \n", 1),
			"test \"a running pod's IP is allowed after the debounce\" {\n  ", []string{"vars", "given", "expect"}, []string{"at"}},
		{"in an expect", strings.Replace(good, "    keys = [\"10.0.0.7\", \"fd00::7\"]\n", "    keys = [\"10.0.0.7\", \"fd00::7\"]\n    \n", 1),
			"    keys = [\"10.0.0.7\", \"fd00::7\"]\n    ", []string{"state", "writes", "content", "contains"}, []string{"at", "keys", "add"}},
		{"sources", strings.Replace(good, "test \"a running pod's IP is allowed after the debounce\" {\n",
			"test \"a running pod's IP is allowed after the debounce\" {\n  given \"\n", 1),
			"test \"a running pod's IP is allowed after the debounce\" {\n  given \"", []string{"source.kubernetes.backend_pods"}, []string{"sink.ebpf_map.allowed"}},
		{"sinks", strings.Replace(good, "test \"a running pod's IP is allowed after the debounce\" {\n",
			"test \"a running pod's IP is allowed after the debounce\" {\n  expect \"sink.\n", 1),
			"test \"a running pod's IP is allowed after the debounce\" {\n  expect \"sink.", []string{"sink.ebpf_map.allowed", "sink.audit.trail"}, []string{"source.kubernetes.backend_pods"}},
		{"no functions in values", strings.Replace(good, `at    = "0s"`, `at    = `, 1), `at    = `, nil, []string{"lower", "var"}},
	} {
		t.Run("complete "+tc.name, func(t *testing.T) {
			c.change(name, tc.text)
			got := labels(c.complete(name, posOf(t, tc.text, tc.after, len(tc.after))))
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("%q missing from %v", w, got)
				}
			}
			for _, n := range tc.not {
				if slices.Contains(got, n) {
					t.Errorf("%q offered: %v", n, got)
				}
			}
		})
	}
	c.change(name, good)

	t.Run("hover", func(t *testing.T) {
		for _, tc := range []struct {
			at   string
			off  int
			want string
		}{
			{`state = { "10.0.0.7"`, 2, "**state** `map(any)`"},
			{`given "source.kubernetes.backend_pods"`, 10, `source "kubernetes" "backend_pods" {`},
		} {
			var h protocol.Hover
			c.at(protocol.MethodTextDocumentHover, name, posOf(t, good, tc.at, tc.off), &h)
			if !strings.Contains(h.Contents.Value, tc.want) {
				t.Errorf("hover on %s: %q lacks %q", tc.at, h.Contents.Value, tc.want)
			}
		}
	})
	t.Run("definition", func(t *testing.T) {
		var locs []protocol.Location
		c.at(protocol.MethodTextDocumentDefinition, name, posOf(t, good, `given "source.kubernetes.backend_pods"`, 10), &locs)
		if len(locs) != 1 || !strings.HasSuffix(string(locs[0].URI), "/main.hcl") || locs[0].Range.Start.Line != 19 {
			t.Errorf("definition of a given's source: %v, want main.hcl line 20", locs)
		}
	})
}
