package schema

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// MaxNesting is how deep brackets, parentheses, braces, template
// interpolations and unary operators may nest in a configuration file. The
// HCL parser and evaluator recurse once per level, and a fatal stack
// overflow cannot be recovered, so deeper input is refused before parsing.
// Real configurations stay below 20.
const MaxNesting = 256

// MaxOperators is how many binary and conditional operators one
// expression may chain at one nesting level: a chain of N operators parses
// into a tree N levels deep.
const MaxOperators = 1000

// MaxConfigBytes is the largest configuration file read (the same cap as
// the file() function).
const MaxConfigBytes = 16 << 20

// MaxConfigTokens is how many tokens one configuration file may hold. The
// parser and the compiler each cost a few hundred bytes per token, so a
// longer file is refused after one lexing pass, before either runs. A static source of 100,000
// records is about 600,000 tokens.
const MaxConfigTokens = 1_000_000

// CheckNesting scans src with the HCL lexer, which does not recurse, and
// returns an error diagnostic at the first token that nests deeper than
// MaxNesting. ParseSource and Load call it; fmt and -var values call it
// before their own parse.
func CheckNesting(src []byte, filename string) hcl.Diagnostics {
	diags, _ := checkNesting(src, filename, MaxNesting, lexChunk)
	return diags
}

// checkNesting is CheckNesting with the nesting limit and the size of the
// chunks the lexer reads given. It also returns cuts, where src may be
// parsed in pieces (parseInPieces): the offsets just after a newline
// outside every bracket, string, template and heredoc that follows a
// top-level item.
//
// The lexer keeps every token of what it lexes, about 100 bytes each, so
// src is lexed a chunk at a time, each chunk starting at the last cut the
// one before found, where the lexer is in its initial state: each byte is
// lexed about once, a limit is found in the chunk that holds it (a file
// nested 500,000 deep is not lexed whole), and the tokens held at once
// are a chunk's. A chunk without a cut is lexed again twice as long.
func checkNesting(src []byte, filename string, limit, chunk int) (hcl.Diagnostics, []int) {
	if len(src) > MaxConfigBytes {
		return hcl.Diagnostics{tooLarge(filename, int64(len(src)))}, nil
	}
	c := &nestCheck{src: src, filename: filename, n: newNestCounter(limit), at: hcl.InitialPos}
	c.save()
	for size := chunk; ; {
		from := c.at.Byte
		end := min(from+size, len(src))
		if diags, done := c.lex(end); done {
			if diags.HasErrors() {
				return diags, nil
			}
			return nil, c.cuts
		}
		if c.at.Byte == from {
			size *= 2 // no cut in the chunk
		} else {
			size = chunk
		}
	}
}

// tooLarge is the error for a configuration file of size bytes, over
// MaxConfigBytes.
func tooLarge(filename string, size int64) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Configuration file too large",
		Detail:  fmt.Sprintf("%s holds %d bytes; a configuration file may hold at most %d. Split it or move data into files read by a source.", filename, size, MaxConfigBytes),
		Subject: &hcl.Range{Filename: filename, Start: hcl.InitialPos, End: hcl.InitialPos}}
}

// lexChunk is the size of the chunks checkNesting lexes.
const lexChunk = 64 << 10

// prefixMargin is how far before the end of a chunk a token must end to
// be lexed as in the whole file: the lexer looks ahead a few bytes (a
// number's exponent, a heredoc's marker line), and the last token may be
// cut.
const prefixMargin = 256

// nestCheck is checkNesting's state: the tokens counted and followed up to
// the last cut (at), and the cuts found.
type nestCheck struct {
	src      []byte
	filename string
	n        *nestCounter
	tokens   int
	at       hcl.Pos
	cuts     []int
	// saved is the counter and the token count at the cut at, where the
	// next chunk starts.
	saved       nestCounter
	savedTokens int
}

// save records the state at the cut at.
func (c *nestCheck) save() {
	c.saved, c.savedTokens = *c.n, c.tokens
	c.saved.ops = slices.Clone(c.n.ops)
}

// lex lexes src from the last cut to end and follows its tokens. done is
// true with the diagnostic of the first token over a limit, or at the end
// of src; otherwise the state is that at the chunk's last cut (at).
func (c *nestCheck) lex(end int) (diags hcl.Diagnostics, done bool) {
	whole := end == len(c.src)
	// Lexing errors are the parser's to report.
	tokens, _ := hclsyntax.LexConfig(c.src[c.at.Byte:end], c.filename, c.at)
	item := false // a top-level item started since the last cut
	for _, tok := range tokens {
		if !whole && tok.Range.End.Byte > end-prefixMargin {
			*c.n, c.tokens = c.saved, c.savedTokens
			c.n.ops = slices.Clone(c.saved.ops)
			return nil, false
		}
		if c.tokens == MaxConfigTokens {
			rng := tok.Range
			return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Configuration file too long",
				Detail:  fmt.Sprintf("%s holds more than %d tokens (names, literals, operators), the most a configuration file may hold. Split it, or move data into files read by a source (source \"files\").", c.filename, MaxConfigTokens),
				Subject: &rng}}, true
		}
		c.tokens++
		if r := c.n.add(tok.Type, tok.Bytes); r != nestOK {
			return c.n.diagnostic(r, tok.Range), true
		}
		if c.n.depth == 0 {
			switch {
			case tok.Type == hclsyntax.TokenIdent:
				item = true
			case item && (tok.Type == hclsyntax.TokenNewline || tok.Type == hclsyntax.TokenComment && bytes.HasSuffix(tok.Bytes, []byte("\n"))):
				c.cuts = append(c.cuts, tok.Range.End.Byte)
				c.at = tok.Range.End
				c.save()
				item = false
			}
		}
	}
	return nil, true
}

// diagnostic is the error diagnostic of result r (not nestOK) at rng.
func (n *nestCounter) diagnostic(r nestResult, rng hcl.Range) hcl.Diagnostics {
	switch r {
	case nestNumber:
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid number",
			Detail: sentenceOf(n.err) + " Write a smaller number, or read large data with a source.", Subject: &rng}}
	case nestOperators:
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Expression too long",
			Detail:  fmt.Sprintf("More than %d operators are chained in one expression here. Split it, for example with locals.", MaxOperators),
			Subject: &rng}}
	}
	return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Configuration nested too deeply",
		Detail: fmt.Sprintf("Brackets, braces, parentheses, interpolations, template directives and unary operators nest more than %d levels deep here. "+
			"Flatten the expression, for example with locals.", n.limit),
		Subject: &rng}}
}

// nestResult is what one more token does to a nestCounter.
type nestResult int

const (
	nestOK        nestResult = iota
	nestNumber               // a number literal CheckNumberLiteral refuses (in err)
	nestOperators            // more than MaxOperators chained at one level
	nestDeep                 // nested deeper than the limit
)

// nestCounter follows the tokens of a file and says when they nest too
// deeply, chain too many operators or hold a number too large.
type nestCounter struct {
	limit        int
	depth, unary int
	templ        int   // template directives (%{if}, %{for}) open
	ops          []int // operators chained at each depth
	prev1, prev2 hclsyntax.TokenType
	err          error
}

func newNestCounter(limit int) *nestCounter {
	return &nestCounter{limit: limit, ops: []int{0}}
}

func (n *nestCounter) add(typ hclsyntax.TokenType, text []byte) nestResult {
	prev1, prev2 := n.prev1, n.prev2
	n.prev1, n.prev2 = typ, prev1
	if typ == hclsyntax.TokenIdent && prev1 == hclsyntax.TokenTemplateControl {
		switch string(text) {
		case "if", "for":
			n.templ++
		case "endif", "endfor":
			n.templ = max(0, n.templ-1)
		}
	}
	switch typ {
	case hclsyntax.TokenOParen, hclsyntax.TokenOBrack, hclsyntax.TokenOBrace,
		hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl,
		hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc:
		n.depth++
		n.unary = 0
		n.ops = append(n.ops, 0)
	case hclsyntax.TokenCParen, hclsyntax.TokenCBrack, hclsyntax.TokenCBrace,
		hclsyntax.TokenTemplateSeqEnd, hclsyntax.TokenCQuote, hclsyntax.TokenCHeredoc:
		if n.depth > 0 {
			n.depth--
			n.ops = n.ops[:len(n.ops)-1]
		}
		// A splat [*] nests the rest of its chain, as .* does.
		if typ == hclsyntax.TokenCBrack && prev1 == hclsyntax.TokenStar && prev2 == hclsyntax.TokenOBrack {
			n.ops[len(n.ops)-1]++
		}
		n.unary = 0
	case hclsyntax.TokenNumberLit:
		if err := CheckNumberLiteral(string(text)); err != nil {
			n.err = err
			return nestNumber
		}
		n.unary = 0
	case hclsyntax.TokenMinus, hclsyntax.TokenBang:
		// A run of unary operators nests like parentheses (- - - 1).
		n.unary++
		n.ops[len(n.ops)-1]++
	case hclsyntax.TokenComma, hclsyntax.TokenNewline:
		n.unary = 0
		n.ops[len(n.ops)-1] = 0
	case hclsyntax.TokenPlus, hclsyntax.TokenStar, hclsyntax.TokenSlash, hclsyntax.TokenPercent,
		hclsyntax.TokenEqualOp, hclsyntax.TokenNotEqual, hclsyntax.TokenLessThan, hclsyntax.TokenLessThanEq,
		hclsyntax.TokenGreaterThan, hclsyntax.TokenGreaterThanEq, hclsyntax.TokenAnd, hclsyntax.TokenOr,
		hclsyntax.TokenQuestion:
		n.unary = 0
		n.ops[len(n.ops)-1]++
	default:
		n.unary = 0
	}
	if n.ops[len(n.ops)-1] > MaxOperators {
		return nestOperators
	}
	if n.depth+n.unary+n.templ > n.limit {
		return nestDeep
	}
	return nestOK
}

// sentenceOf is err's message as a sentence: capitalised, with a full stop.
func sentenceOf(err error) string {
	m := err.Error()
	if m == "" {
		return m
	}
	return strings.ToUpper(m[:1]) + m[1:] + "."
}
