package lsp

import (
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"
)

// text is one file's bytes with the byte offset of each line start, for
// converting between hcl's byte offsets and LSP's UTF-16 positions.
type text struct {
	src   []byte
	lines []int // byte offset of each line's first byte
}

func newText(src []byte) *text {
	t := &text{src: src, lines: []int{0}}
	for i, b := range src {
		if b == '\n' {
			t.lines = append(t.lines, i+1)
		}
	}
	return t
}

// offset returns the byte offset of an LSP position, clamped to the text:
// a line past the end is the end, a column past a line's end is its end.
func (t *text) offset(p protocol.Position) int {
	if int(p.Line) >= len(t.lines) {
		return len(t.src)
	}
	i := t.lines[p.Line]
	end := t.lineEnd(int(p.Line))
	for units := uint32(0); i < end; {
		r, size := utf8.DecodeRune(t.src[i:end])
		n := uint32(1)
		if r >= 0x10000 {
			n = 2
		}
		if units+n > p.Character {
			break
		}
		units += n
		i += size
	}
	return i
}

// lineEnd is the offset of the newline ending line n (or the text's end),
// not counting a carriage return before it.
func (t *text) lineEnd(n int) int {
	end := len(t.src)
	if n+1 < len(t.lines) {
		end = t.lines[n+1] - 1
	}
	if end > t.lines[n] && t.src[end-1] == '\r' {
		end--
	}
	return end
}

// position returns the LSP position of a byte offset, clamped to the text.
func (t *text) position(off int) protocol.Position {
	off = max(0, min(off, len(t.src)))
	line := sort.Search(len(t.lines), func(i int) bool { return t.lines[i] > off }) - 1
	units := 0
	for i := t.lines[line]; i < off; {
		r, size := utf8.DecodeRune(t.src[i:])
		if i+size > off {
			break
		}
		units++
		if r >= 0x10000 {
			units++
		}
		i += size
	}
	return protocol.Position{Line: uint32(line), Character: uint32(units)}
}

// hclOffset is the byte offset of an hcl position. A position built by
// hand without a byte offset is found from its line and column (columns
// count characters).
func (t *text) hclOffset(p hcl.Pos) int {
	if p.Byte > 0 || p.Line <= 1 && p.Column <= 1 {
		return p.Byte
	}
	line := p.Line - 1
	if line < 0 || line >= len(t.lines) {
		return len(t.src)
	}
	i, end := t.lines[line], t.lineEnd(line)
	for c := 1; c < p.Column && i < end; c++ {
		_, size := utf8.DecodeRune(t.src[i:end])
		i += size
	}
	return i
}

// rangeOf converts an hcl range of this text.
func (t *text) rangeOf(r hcl.Range) protocol.Range {
	start := t.position(t.hclOffset(r.Start))
	end := t.position(t.hclOffset(r.End))
	if end.Line < start.Line || end.Line == start.Line && end.Character < start.Character {
		end = start
	}
	return protocol.Range{Start: start, End: end}
}

// linePrefix is the text of the offset's line before it.
func (t *text) linePrefix(off int) string {
	off = max(0, min(off, len(t.src)))
	line := sort.Search(len(t.lines), func(i int) bool { return t.lines[i] > off }) - 1
	return string(t.src[t.lines[line]:off])
}

// fileName returns the absolute file path of a file:// URI, or "" for any
// other URI (an unsaved buffer, another scheme) or a malformed one.
func fileName(u protocol.DocumentURI) string {
	p, err := url.Parse(string(u))
	if err != nil || p.Scheme != "file" || p.Path == "" {
		return ""
	}
	return filepath.Clean(filepath.FromSlash(p.Path))
}

// fileURI is the URI of an absolute file path.
func fileURI(name string) protocol.DocumentURI { return uri.File(name) }

// isTestFile reports a config test file, which validate does not load.
func isTestFile(name string) bool { return strings.HasSuffix(name, ".test.hcl") }
