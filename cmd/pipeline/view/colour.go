package view

import (
	"io"
	"os"

	"golang.org/x/term"
)

// Colourful reports whether text logs to w get colours: w is a terminal
// and NO_COLOR (no-color.org) is not set.
func Colourful(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("NO_COLOR") != "" {
		return false
	}
	return term.IsTerminal(int(f.Fd()))
}
