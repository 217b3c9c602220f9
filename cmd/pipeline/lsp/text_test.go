package lsp

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"
)

// TestPositions: LSP columns are UTF-16 code units; hcl's are bytes.
func TestPositions(t *testing.T) {
	src := []byte("ab\né😀x\r\nlast")
	tx := newText(src)
	for _, tc := range []struct {
		p   protocol.Position
		off int
	}{
		{protocol.Position{Line: 0, Character: 0}, 0},
		{protocol.Position{Line: 0, Character: 2}, 2},
		{protocol.Position{Line: 0, Character: 9}, 2},  // past the line's end: its end
		{protocol.Position{Line: 1, Character: 1}, 5},  // after é (2 bytes, 1 unit)
		{protocol.Position{Line: 1, Character: 2}, 5},  // inside 😀's surrogate pair: before it
		{protocol.Position{Line: 1, Character: 3}, 9},  // after 😀 (4 bytes, 2 units)
		{protocol.Position{Line: 1, Character: 5}, 10}, // before \r\n
		{protocol.Position{Line: 2, Character: 4}, 16},
		{protocol.Position{Line: 9, Character: 0}, 16}, // past the end
	} {
		if got := tx.offset(tc.p); got != tc.off {
			t.Errorf("offset(%v) = %d, want %d", tc.p, got, tc.off)
		}
	}
	for off, want := range map[int]protocol.Position{0: {}, 5: {Line: 1, Character: 1}, 9: {Line: 1, Character: 3},
		10: {Line: 1, Character: 4}, 16: {Line: 2, Character: 4}, 99: {Line: 2, Character: 4}} {
		if got := tx.position(off); got != want {
			t.Errorf("position(%d) = %v, want %v", off, got, want)
		}
	}
	// A position hcl built without a byte offset is found by line and column.
	if got := tx.hclOffset(hcl.Pos{Line: 2, Column: 3}); got != 9 {
		t.Errorf("hclOffset(2:3) = %d, want 9", got)
	}
	if got := fileName(uri.File("/a b/é.hcl")); got != "/a b/é.hcl" {
		t.Errorf("fileName = %q", got)
	}
	if got := fileName("untitled:Untitled-1"); got != "" {
		t.Errorf("fileName of a non-file URI = %q", got)
	}
}
