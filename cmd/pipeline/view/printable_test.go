package view

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// hostileText holds what a terminal would obey: window title, clear
// screen, C1 CSI, DEL, carriage return and a bidi override.
const hostileText = "x\x1b]0;pwned\x07\x1b[2J\u009b2J\x7f\r\u202eevil"

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain é😀\tand\nlines": "plain é😀\tand\nlines",
		hostileText:            `x\x1b]0;pwned\x07\x1b[2J\x9b2J\x7f\x0d\u202eevil`,
		"bad \xff byte":        `bad \ufffd byte`,
		"\u2028\u2066":         `\u2028\u2066`,
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
		if again := Printable(Printable(in)); again != Printable(in) {
			t.Errorf("Printable is not idempotent on %q: %q", in, again)
		}
	}
}

// FuzzPrintable: whatever the text, printable's output is valid UTF-8
// with no control, separator or bidi character but newline and tab, and
// printing it again changes nothing.
func FuzzPrintable(f *testing.F) {
	for _, s := range []string{hostileText, "plain", "bad \xff\xfe", "\u2066\u2069\u200f", "\r\n\t\x00\x7f\u0085"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Printable(s)
		if !utf8.ValidString(out) || strings.ContainsFunc(out, isUnsafe) {
			t.Fatalf("Printable(%q) = %q", s, out)
		}
		if again := Printable(out); again != out {
			t.Fatalf("Printable(%q) = %q, again %q", s, out, again)
		}
	})
}
