package schema

import (
	"bytes"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// pieceBytes is the least a piece of a file parsed on its own holds (see
// ParseConfig).
const pieceBytes = 1 << 10

// ParseConfig refuses src as CheckNesting does, and otherwise parses it:
// the same file, body and diagnostics as hclsyntax.ParseConfig.
//
// The HCL lexer keeps every token of a file (about 100 bytes each) in one
// slice, grown as it goes, while the parser needs only the tokens of the
// item it is on. So a file is parsed in pieces of whole top-level items,
// cut where the nesting check saw an item end (parseInPieces), each lexed
// on its own at its own position: the slices stay small, and the pieces
// are parsed on every processor at once (docs/performance.md).
func ParseConfig(src []byte, filename string) (*hcl.File, hcl.Diagnostics) {
	diags, cuts := checkNesting(src, filename, MaxNesting, lexChunk)
	if diags.HasErrors() {
		return nil, diags
	}
	if f, ok := parseInPieces(src, filename, cuts, pieceBytes); ok {
		return f, nil
	}
	return hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
}

// parseInPieces parses src in pieces of at least size bytes, cut at cuts,
// offsets where a top-level item starts after a newline outside every
// bracket, string, template and heredoc (checkNesting), and merges the pieces'
// bodies into the first one, whose file is returned. The lexer is in its
// initial state at such an offset and the parser between two items, so
// the pieces hold exactly the tokens and items of the whole file, with
// the same ranges. What the whole file would say otherwise is left to
// the whole parse (ok false): any diagnostic, for the parser's recovery
// crosses items, and an attribute set in two pieces, which it reports as
// redefined. The pieces are parsed on every processor at once.
func parseInPieces(src []byte, filename string, cuts []int, size int) (*hcl.File, bool) {
	pieces := cutPieces(src, cuts, size)
	if len(pieces) < 2 {
		return nil, false
	}
	files := make([]*hcl.File, len(pieces))
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(pieces)) {
		wg.Go(func() {
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= len(pieces) {
					return
				}
				p := pieces[i]
				f, diags := hclsyntax.ParseConfig(src[p.start.Byte:p.end], filename, p.start)
				if len(diags) > 0 {
					failed.Store(true)
					return
				}
				files[i] = f
			}
		})
	}
	wg.Wait()
	if failed.Load() {
		return nil, false
	}
	first := files[0]
	body := first.Body.(*hclsyntax.Body)
	for _, f := range files[1:] {
		b := f.Body.(*hclsyntax.Body)
		for name, a := range b.Attributes {
			if _, dup := body.Attributes[name]; dup {
				return nil, false
			}
			body.Attributes[name] = a
		}
		body.Blocks = append(body.Blocks, b.Blocks...)
	}
	last := files[len(files)-1].Body.(*hclsyntax.Body)
	body.SrcRange = hcl.RangeBetween(body.SrcRange, last.SrcRange)
	body.EndRange = last.EndRange
	first.Bytes = src
	return first, true
}

// piece is a part of a file, from start (a line's start) to end.
type piece struct {
	start hcl.Pos
	end   int
}

// cutPieces cuts src at those of cuts that leave every piece at least
// size bytes long.
func cutPieces(src []byte, cuts []int, size int) []piece {
	var out []piece
	start := hcl.InitialPos
	for start.Byte < len(src) {
		for len(cuts) > 0 && cuts[0]-start.Byte < size {
			cuts = cuts[1:]
		}
		end := len(src)
		if len(cuts) > 0 && len(src)-cuts[0] >= size {
			end = cuts[0]
		}
		out = append(out, piece{start: start, end: end})
		// A cut follows a newline: the next piece starts a line. The
		// lexer counts lines by "\n" (and "\r\n", which holds one).
		start = hcl.Pos{Line: start.Line + bytes.Count(src[start.Byte:end], []byte("\n")), Column: 1, Byte: end}
	}
	return out
}
