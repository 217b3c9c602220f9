package schema

import (
	"fmt"
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
// parser and the compiler each cost a few hundred bytes per token (a list
// of 500,000 numbers allocated 1.9 GB on its way to a graph), so a longer
// file is refused after one lexing pass. A static source of 100,000
// records is about 600,000 tokens.
const MaxConfigTokens = 1_000_000

// CheckNesting scans src with the HCL lexer, which does not recurse, and
// returns an error diagnostic at the first token that nests deeper than
// MaxNesting. ParseSource and Load call it; fmt and -var values call it
// before their own parse.
func CheckNesting(src []byte, filename string) hcl.Diagnostics {
	return checkNesting(src, filename, MaxNesting)
}

func checkNesting(src []byte, filename string, limit int) hcl.Diagnostics {
	if len(src) > MaxConfigBytes {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Configuration file too large",
			Detail:  fmt.Sprintf("%s holds %d bytes; a configuration file may hold at most %d. Split it or move data into files read by a source.", filename, len(src), MaxConfigBytes),
			Subject: &hcl.Range{Filename: filename, Start: hcl.InitialPos, End: hcl.InitialPos}}}
	}
	tokens, _ := hclsyntax.LexConfig(src, filename, hcl.InitialPos) // lexing errors are the parser's to report
	depth, unary := 0, 0
	templ := 0      // template directives (%{if}, %{for}) open
	ops := []int{0} // operators chained at each depth
	for i, tok := range tokens {
		if tok.Type == hclsyntax.TokenIdent && i > 0 && tokens[i-1].Type == hclsyntax.TokenTemplateControl {
			switch string(tok.Bytes) {
			case "if", "for":
				templ++
			case "endif", "endfor":
				templ = max(0, templ-1)
			}
		}
		switch tok.Type {
		case hclsyntax.TokenOParen, hclsyntax.TokenOBrack, hclsyntax.TokenOBrace,
			hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl,
			hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc:
			depth++
			unary = 0
			ops = append(ops, 0)
		case hclsyntax.TokenCParen, hclsyntax.TokenCBrack, hclsyntax.TokenCBrace,
			hclsyntax.TokenTemplateSeqEnd, hclsyntax.TokenCQuote, hclsyntax.TokenCHeredoc:
			if depth > 0 {
				depth--
				ops = ops[:len(ops)-1]
			}
			// A splat [*] nests the rest of its chain, as .* does.
			if tok.Type == hclsyntax.TokenCBrack && i >= 2 && tokens[i-1].Type == hclsyntax.TokenStar && tokens[i-2].Type == hclsyntax.TokenOBrack {
				ops[len(ops)-1]++
			}
			unary = 0
		case hclsyntax.TokenNumberLit:
			if err := CheckNumberLiteral(string(tok.Bytes)); err != nil {
				rng := tok.Range
				return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid number",
					Detail: sentenceOf(err) + " Write a smaller number, or read large data with a source.", Subject: &rng}}
			}
			unary = 0
		case hclsyntax.TokenMinus, hclsyntax.TokenBang:
			// A run of unary operators nests like parentheses (- - - 1).
			unary++
			ops[len(ops)-1]++
		case hclsyntax.TokenComma, hclsyntax.TokenNewline:
			unary = 0
			ops[len(ops)-1] = 0
		case hclsyntax.TokenPlus, hclsyntax.TokenStar, hclsyntax.TokenSlash, hclsyntax.TokenPercent,
			hclsyntax.TokenEqualOp, hclsyntax.TokenNotEqual, hclsyntax.TokenLessThan, hclsyntax.TokenLessThanEq,
			hclsyntax.TokenGreaterThan, hclsyntax.TokenGreaterThanEq, hclsyntax.TokenAnd, hclsyntax.TokenOr,
			hclsyntax.TokenQuestion:
			unary = 0
			ops[len(ops)-1]++
		default:
			unary = 0
		}
		if ops[len(ops)-1] > MaxOperators {
			rng := tok.Range
			return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Expression too long",
				Detail:  fmt.Sprintf("More than %d operators are chained in one expression here. Split it, for example with locals.", MaxOperators),
				Subject: &rng}}
		}
		if depth+unary+templ > limit {
			rng := tok.Range
			return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Configuration nested too deeply",
				Detail: fmt.Sprintf("Brackets, braces, parentheses, interpolations, template directives and unary operators nest more than %d levels deep here. "+
					"Flatten the expression, for example with locals.", limit),
				Subject: &rng}}
		}
	}
	// Last, so that a long chain or deep nesting gets its own diagnostic.
	if len(tokens) > MaxConfigTokens {
		rng := tokens[MaxConfigTokens].Range
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Configuration file too long",
			Detail:  fmt.Sprintf("%s holds %d tokens (names, literals, operators); a configuration file may hold at most %d. Split it, or move data into files read by a source (source \"files\").", filename, len(tokens), MaxConfigTokens),
			Subject: &rng}}
	}
	return nil
}

// sentenceOf is err's message as a sentence: capitalised, with a full stop.
func sentenceOf(err error) string {
	m := err.Error()
	if m == "" {
		return m
	}
	return strings.ToUpper(m[:1]) + m[1:] + "."
}
