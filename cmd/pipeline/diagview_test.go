package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pipeline/pipeline/cmd/pipeline/view"
	"github.com/pipeline/pipeline/schema"
)

// A configuration cannot drive the terminal through a diagnostic: control
// characters of the source line, the detail and the file name are escaped.
func TestDiagnosticsEscapeControlCharacters(t *testing.T) {
	title, clear := "\x1b]0;pwned\x07", "\x1b[2J\x1b[H"
	src := "locals {\n  x = \"" + title + clear + "\" + 1\n}\n"
	l := schema.NewLoader()
	_, diags := l.ParseSource("evil\x1b[31m.hcl", []byte(src), schema.Options{Environ: []string{}})
	if !diags.HasErrors() {
		t.Fatal("no diagnostic")
	}
	var out bytes.Buffer
	view.WriteDiagsText(&out, l.Files(), diags)
	if strings.ContainsAny(out.String(), "\x1b\x07\r") {
		t.Errorf("raw control characters in:\n%q", out.String())
	}
	if !strings.Contains(out.String(), `\x1b]0;pwned\x07`) {
		t.Errorf("escaped form missing in:\n%s", out.String())
	}
	if got := view.Printable("a\tb\nc\u202ed\xff"); got != "a\tb\nc\\u202ed\\ufffd" {
		t.Errorf("printable = %q", got)
	}
}
