package lsp

import (
	"bytes"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// frame is a block enclosing the cursor.
type frame struct {
	name    string
	labels  []string
	present map[string]bool // attributes and nested blocks it already holds
}

// cursor is where the cursor is in the block structure of a file. It is
// found from hclsyntax's tokens rather than its syntax tree, because a
// half-typed line ("  pi", "input = transform.") is a syntax error that
// the tree drops, while the tokens around it still say which block the
// cursor is in.
type cursor struct {
	frames []*frame // enclosing blocks, outermost first
	attr   string   // the attribute whose value holds the cursor; "" between items
}

// tokenScan is the state of the scan of one file's tokens.
type tokenScan struct {
	stack  []*frame
	item   []hclsyntax.Token // tokens of the item (attribute or block header) being read
	attr   string
	depth  int // brackets open in the current attribute's value
	inExpr bool
	off    int // the cursor
}

// cursorAt scans src up to off. Attributes after the cursor in the
// innermost block still count as present, so completion does not offer
// what is already written further down. The scan starts at the end of
// the last top-level block the parse found complete before the cursor
// (a top-level position) and stops at the first one starting after it,
// so a large file is not lexed whole.
func cursorAt(f *parsed, off int) cursor {
	src, start, end := f.text.src, hcl.InitialPos, len(f.text.src)
	for _, r := range f.spans {
		if r.End.Byte <= off && r.End.Byte > start.Byte && r.End.Byte <= len(src) {
			start = r.End
		}
		if r.Start.Byte > off && r.Start.Byte < end {
			end = r.Start.Byte
		}
	}
	toks, _ := hclsyntax.LexConfig(src[start.Byte:max(start.Byte, end)], f.name, start)
	s := tokenScan{off: off}
	var at *cursor
	var inner *frame
	for _, tok := range toks {
		if at == nil && tok.Range.Start.Byte >= off {
			at = &cursor{frames: append([]*frame(nil), s.stack...)}
			if s.inExpr {
				at.attr = s.attr
			}
			if len(s.stack) > 0 {
				inner = s.stack[len(s.stack)-1]
			}
		}
		if at != nil && (inner == nil || !contains(s.stack, inner)) {
			break
		}
		s.step(tok)
	}
	if at == nil {
		at = &cursor{frames: s.stack}
		if s.inExpr {
			at.attr = s.attr
		}
	}
	return *at
}

func contains(stack []*frame, f *frame) bool {
	for _, g := range stack {
		if g == f {
			return true
		}
	}
	return false
}

// step advances the scan by one token.
func (s *tokenScan) step(tok hclsyntax.Token) {
	if s.inExpr {
		switch tok.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen,
			hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl, hclsyntax.TokenOHeredoc:
			s.depth++
		case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen,
			hclsyntax.TokenTemplateSeqEnd, hclsyntax.TokenCHeredoc:
			s.depth--
			if s.depth < 0 && tok.Type == hclsyntax.TokenCBrace { // "a = 1 }" closes the block
				s.inExpr, s.depth = false, 0
				s.pop()
			}
		case hclsyntax.TokenNewline, hclsyntax.TokenEOF:
			if s.depth <= 0 {
				s.inExpr, s.depth = false, 0
			}
		case hclsyntax.TokenComment: // a line comment holds its newline: `a = 1 # why`
			if s.depth <= 0 && bytes.HasSuffix(tok.Bytes, []byte("\n")) {
				s.inExpr, s.depth = false, 0
			}
		}
		return
	}
	switch tok.Type {
	case hclsyntax.TokenNewline, hclsyntax.TokenEOF:
		s.item = s.item[:0]
	case hclsyntax.TokenComment: // a line comment holds its newline and ends the line
		if bytes.HasSuffix(tok.Bytes, []byte("\n")) {
			s.item = s.item[:0]
		}
	case hclsyntax.TokenEqual:
		if len(s.item) > 0 && s.item[0].Type == hclsyntax.TokenIdent {
			s.attr = string(s.item[0].Bytes)
			s.mark(s.item[0])
		}
		s.item, s.inExpr, s.depth = s.item[:0], true, 0
	case hclsyntax.TokenOBrace:
		f := &frame{present: map[string]bool{}}
		if len(s.item) > 0 && s.item[0].Type == hclsyntax.TokenIdent {
			f.name = string(s.item[0].Bytes)
			s.mark(s.item[0])
			for _, t := range s.item[1:] {
				if t.Type == hclsyntax.TokenQuotedLit || t.Type == hclsyntax.TokenIdent {
					f.labels = append(f.labels, string(t.Bytes))
				}
			}
		}
		s.stack = append(s.stack, f)
		s.item = s.item[:0]
	case hclsyntax.TokenCBrace:
		s.pop()
		s.item = s.item[:0]
	default:
		s.item = append(s.item, tok)
	}
}

func (s *tokenScan) pop() {
	if len(s.stack) > 0 {
		s.stack = s.stack[:len(s.stack)-1]
	}
}

// mark records a name as present in the innermost block, unless the
// cursor is on it (it is being typed).
func (s *tokenScan) mark(name hclsyntax.Token) {
	if len(s.stack) > 0 && !within(name.Range, s.off) {
		s.stack[len(s.stack)-1].present[string(name.Bytes)] = true
	}
}
