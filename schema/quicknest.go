package schema

import (
	"bytes"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// quickNesting reports whether src is certainly within the limits of
// checkNesting, without the HCL lexer: the lexer keeps a token of about
// 100 bytes per word of the file, which made this check cost as much as
// the parse it protects. It scans the plain subset of HCL most files are
// written in (ASCII code, quoted strings with ${} and %{} templates,
// comments) into the same tokens the lexer would, feeding the same
// nestCounter. When it is not certain, lexed is how much of src the lexer
// must read to find the exact token: up to the end of the token that went
// over a limit (MaxConfigTokens included), so that a file nested 500,000
// deep is not lexed whole; all of src on anything outside the subset
// (heredocs, ~ strip markers, $${ and %%{ escapes, carriage returns,
// non-ASCII outside strings and comments, unterminated strings or
// comments).
//
// When ok, cuts are where src may be parsed in pieces (parseInPieces):
// the offsets just after a newline outside every bracket, string and
// template that follows a top-level item.
func quickNesting(src []byte, limit int) (ok bool, lexed []byte, cuts []int) {
	n := newNestCounter(limit)
	tokens := 0
	item := false // a top-level item started since the last cut
	ok, stop := quickScan(src, func(t hclsyntax.TokenType, start, end int) bool {
		tokens++
		if tokens > MaxConfigTokens || n.add(t, src[start:end]) != nestOK {
			return false
		}
		if n.depth == 0 {
			switch {
			case t == hclsyntax.TokenIdent:
				item = true
			case (t == hclsyntax.TokenNewline || t == hclsyntax.TokenComment && src[end-1] == '\n') && item:
				cuts = append(cuts, end)
				item = false
			}
		}
		return true
	})
	switch {
	case ok:
		return true, nil, cuts
	case stop >= 0:
		return false, src[:stop], nil
	}
	return false, src, nil
}

// quickScan hands emit the tokens of src as hclsyntax.LexConfig makes them
// (but for the split of quoted literals and the final TokenEOF), and
// returns true. It returns false and stop -1 when src is not in the subset
// it knows, false and the end of the token when emit refused it.
func quickScan(src []byte, emit func(t hclsyntax.TokenType, start, end int) bool) (ok bool, stop int) {
	braces := 0
	var retBraces []int // the brace level that ends each open ${ or %{
	var inString []bool // the modes the lexer would return to: true a quoted string, false a template sequence
	for i := 0; i < len(src); {
		c := src[i]
		if len(inString) > 0 && inString[len(inString)-1] {
			switch {
			case c == '"':
				inString = inString[:len(inString)-1]
				if !emit(hclsyntax.TokenCQuote, i, i+1) {
					return false, i + 1
				}
				i++
			case (c == '$' || c == '%') && i+1 < len(src) && src[i+1] == '{':
				if i+2 < len(src) && src[i+2] == '~' {
					return false, -1
				}
				t := hclsyntax.TokenTemplateInterp
				if c == '%' {
					t = hclsyntax.TokenTemplateControl
				}
				if !emit(t, i, i+2) {
					return false, i + 2
				}
				braces++
				retBraces = append(retBraces, braces)
				inString = append(inString, false)
				i += 2
			case (c == '$' || c == '%') && i+1 < len(src) && src[i+1] == c:
				return false, -1 // an escape ($${, %%{): the lexer's patterns decide
			default:
				end, ok := quotedLiteral(src, i)
				if !ok {
					return false, -1
				}
				if !emit(hclsyntax.TokenQuotedLit, i, end) {
					return false, end
				}
				i = end
			}
			continue
		}
		start := i
		t := hclsyntax.TokenNil
		switch {
		case c == ' ' || c == '\t':
			i++
			continue
		case c == '\n':
			t, i = hclsyntax.TokenNewline, i+1
		case c >= '0' && c <= '9':
			t, i = hclsyntax.TokenNumberLit, numberEnd(src, i)
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			i++
			for i < len(src) && (src[i] == '_' || src[i] == '-' || src[i] >= 'a' && src[i] <= 'z' || src[i] >= 'A' && src[i] <= 'Z' || src[i] >= '0' && src[i] <= '9') {
				i++
			}
			t = hclsyntax.TokenIdent
		case c == '#' || c == '/' && i+1 < len(src) && src[i+1] == '/':
			// A line comment takes its newline: no TokenNewline follows.
			if j := bytes.IndexByte(src[i:], '\n'); j >= 0 {
				i += j + 1
			} else {
				i = len(src)
			}
			if bytes.IndexByte(src[start:i], '\r') >= 0 {
				return false, -1
			}
			t = hclsyntax.TokenComment
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			j := bytes.Index(src[i+2:], []byte("*/"))
			if j < 0 {
				return false, -1
			}
			t, i = hclsyntax.TokenComment, i+2+j+2
		case c == '"':
			t, i = hclsyntax.TokenOQuote, i+1
			inString = append(inString, true)
		case c == '{':
			t, i = hclsyntax.TokenOBrace, i+1
			braces++
		case c == '}':
			t, i = hclsyntax.TokenCBrace, i+1
			if len(retBraces) > 0 && retBraces[len(retBraces)-1] == braces {
				t = hclsyntax.TokenTemplateSeqEnd
				retBraces = retBraces[:len(retBraces)-1]
				if len(inString) == 0 || inString[len(inString)-1] {
					return false, -1 // not the lexer's state: leave it to the lexer
				}
				inString = inString[:len(inString)-1]
			}
			braces--
		case c == '.' && i+2 < len(src) && src[i+1] == '.' && src[i+2] == '.':
			t, i = hclsyntax.TokenEllipsis, i+3
		case c == '<' && i+1 < len(src) && src[i+1] == '<':
			return false, -1 // a heredoc, perhaps
		default:
			if i+1 < len(src) {
				if t2, ok := twoCharTokens[[2]byte{c, src[i+1]}]; ok {
					t, i = t2, i+2
					break
				}
			}
			if !selfTokens[c] {
				return false, -1
			}
			t, i = hclsyntax.TokenType(c), i+1
		}
		if !emit(t, start, i) {
			return false, i
		}
	}
	return len(inString) == 0, -1
}

// quotedLiteral returns the end of the literal text of a quoted string
// that starts at i: up to the next quote or template sequence, or false
// where the lexer would see something else (a newline, broken UTF-8, an
// escaped newline, the end of the file).
func quotedLiteral(src []byte, i int) (int, bool) {
	for i < len(src) {
		c := src[i]
		switch {
		case c == '"' || (c == '$' || c == '%') && i+1 < len(src) && (src[i+1] == '{' || src[i+1] == c):
			return i, true
		case c == '\\':
			if i+1 >= len(src) || src[i+1] == '\n' || src[i+1] == '\r' || src[i+1] >= utf8.RuneSelf {
				return 0, false
			}
			i += 2
		case c == '\n' || c == '\r':
			return 0, false
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && size <= 1 {
				return 0, false
			}
			i += size
		default:
			i++
		}
	}
	return 0, false // unterminated
}

// numberEnd returns the end of the number literal that starts at i, as the
// lexer's NumberLit matches it: digits, dots and exponents, not ending in
// a dot.
func numberEnd(src []byte, i int) int {
	end := i + 1
	for j := i + 1; j < len(src); {
		c := src[j]
		switch {
		case c >= '0' && c <= '9':
			j++
			end = j
		case c == '.':
			j++
		case c == 'e' || c == 'E':
			k := j + 1
			if k < len(src) && (src[k] == '+' || src[k] == '-') {
				k++
			}
			if k >= len(src) || src[k] < '0' || src[k] > '9' {
				return end
			}
			j = k + 1
			end = j
		default:
			return end
		}
	}
	return end
}

// twoCharTokens are the lexer's two-character operators.
var twoCharTokens = map[[2]byte]hclsyntax.TokenType{
	{'=', '='}: hclsyntax.TokenEqualOp,
	{'!', '='}: hclsyntax.TokenNotEqual,
	{'>', '='}: hclsyntax.TokenGreaterThanEq,
	{'<', '='}: hclsyntax.TokenLessThanEq,
	{'&', '&'}: hclsyntax.TokenAnd,
	{'|', '|'}: hclsyntax.TokenOr,
	{':', ':'}: hclsyntax.TokenDoubleColon,
	{'=', '>'}: hclsyntax.TokenFatArrow,
}

// selfTokens are the characters the lexer makes a token of their own
// type ('~' is left out: it may strip a template's whitespace).
var selfTokens = func() [256]bool {
	var t [256]bool
	for _, c := range []byte("[]().,*/%+-=<>!?:&|^;`'") {
		t[c] = true
	}
	return t
}()
