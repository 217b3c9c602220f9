package lsp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const editedBase = `source "kubernetes" "pods" {
  resource = "pods"
}

transform "extract" "ips" {
  input = source.kubernetes.pods
  key   = object.status.podIP
}

sink "ebpf_map" "m" {
  input = transform.extract.ips
  pin   = "/sys/fs/bpf/m"
  key {
    type = "ip"
  }
}
`

// describe is what completion reads of a cursor.
func describe(c cursor) string {
	var b strings.Builder
	for _, f := range c.frames {
		fmt.Fprintf(&b, "%s%v ", f.name, f.labels)
	}
	return b.String() + "attr=" + c.attr
}

// TestEditedCursor: a parse standing for an edited text (what completion
// uses until the check parses again) finds the cursor where a parse of
// the edited text does, at every offset, for edits inside a block, of a
// whole block, and across blocks.
func TestEditedCursor(t *testing.T) {
	for _, edit := range [][2]string{
		{"  pin   = \"/sys/fs/bpf/m\"\n", "  pin   = \"/sys/fs/bpf/m\"\n  ma\n"},
		{"  key   = object.status.podIP\n", "  key   = object.\n"},
		{"transform \"extract\" \"ips\" {", "locals {\n  a = 1\n}\n\ntransform \"extract\" \"ips\" {"},
		{"podIP\n}\n\nsink \"ebpf_map\" \"m\" {\n  input", "podIP\n  where = true\n}\n\nsink \"ebpf_map\" \"n\" {\n  input"},
		{"resource = \"pods\"", "resource = \"pods\"\n  namespace = \"a\"\n  selector = \"x\""},
		{editedBase, ""},
	} {
		old := parse("/c/main.hcl", []byte(editedBase))
		src := strings.Replace(editedBase, edit[0], edit[1], 1)
		stand, fresh := old.edited([]byte(src)), parse("/c/main.hcl", []byte(src))
		for off := 0; off <= len(src); off++ {
			got, want := cursorAt(stand, off), cursorAt(fresh, off)
			if describe(got) != describe(want) {
				t.Fatalf("edit %q, offset %d (%q): %s, a parse finds %s", edit[1], off, src[max(0, off-10):off], describe(got), describe(want))
			}
			if diff := cmp.Diff(present(want), present(got)); diff != "" {
				t.Fatalf("edit %q, offset %d: present (-parse +edited):\n%s", edit[1], off, diff)
			}
		}
	}
}

// present is what the cursor's innermost block already holds.
func present(c cursor) map[string]bool {
	if len(c.frames) == 0 {
		return nil
	}
	return c.frames[len(c.frames)-1].present
}
