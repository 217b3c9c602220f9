package view

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// printable is the one escaper of the human views (validate, plan,
// explain, tap, top). Their text carries what other people wrote:
// configuration, object names and labels, record keys and values, a
// target's errors. A terminal obeys the control characters in it: ESC
// starts sequences that retitle the window (ESC ]0;...), clear the screen
// (ESC [2J) or, in some terminals, write to the clipboard; C1 controls
// (U+0080-U+009F) do the same in terminals that read them, a carriage
// return overwrites the line it is on, and Unicode bidi overrides reorder
// what is shown. printable writes each of those as a Go-style escape
// (\x1b, \u202e); an invalid UTF-8 byte becomes \ufffd. Newlines and tabs
// stay. JSON views need none of this: their encoder escapes.
func Printable(s string) string {
	if !strings.ContainsFunc(s, isUnsafe) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == utf8.RuneError:
			b.WriteString(`\ufffd`)
		case !isUnsafe(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// isUnsafe: C0 and C1 controls and DEL (unicode.IsControl), line and
// paragraph separators, bidi controls, and invalid UTF-8.
func isUnsafe(r rune) bool {
	return r != '\n' && r != '\t' && (r == utf8.RuneError || unicode.IsControl(r) || r == 0x2028 || r == 0x2029 || unicode.Is(unicode.Bidi_Control, r))
}

// PrintableWriter passes everything written through printable. Each Write
// must hold whole characters, as each fmt.Fprintf call does.
type PrintableWriter struct{ W io.Writer }

// Write writes b through Printable.
func (p PrintableWriter) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.W, Printable(string(b))); err != nil {
		return 0, err
	}
	return len(b), nil
}

// TermText is a coloured human view's text as it is built: what is
// written to it, fmt.Fprintf's included, goes through printable, and only
// Paint's colour codes reach the terminal raw.
type TermText struct {
	b      strings.Builder
	colour bool
}

// NewTermText starts a view's text, in colour when colour is set.
func NewTermText(colour bool) *TermText { return &TermText{colour: colour} }

// String is the text written so far.
func (t *TermText) String() string { return t.b.String() }

// Write adds p through Printable.
func (t *TermText) Write(p []byte) (int, error) {
	t.b.WriteString(Printable(string(p)))
	return len(p), nil
}

// Paint writes s in the colour of an SGR code when colour is on.
func (t *TermText) Paint(code, s string) {
	if !t.colour {
		t.b.WriteString(Printable(s))
		return
	}
	t.b.WriteString(code + Printable(s) + "\x1b[0m")
}
