package main

import (
	"bytes"
	"io"
)

// levelColours are the ANSI colours of the text log's levels on a terminal.
var levelColours = []struct{ plain, coloured []byte }{
	{[]byte("level=ERROR"), []byte("level=\x1b[31mERROR\x1b[0m")},
	{[]byte("level=WARN"), []byte("level=\x1b[33mWARN\x1b[0m")},
	{[]byte("level=INFO"), []byte("level=\x1b[32mINFO\x1b[0m")},
	{[]byte("level=DEBUG"), []byte("level=\x1b[2mDEBUG\x1b[0m")},
}

// colourWriter colours the level of each text log line. slog's text
// handler writes one whole line per Write, with the level as its second
// attribute, so only the first match of a line is coloured.
type colourWriter struct{ w io.Writer }

func (c colourWriter) Write(p []byte) (int, error) {
	for _, lc := range levelColours {
		if i := bytes.Index(p, lc.plain); i >= 0 {
			line := make([]byte, 0, len(p)+len(lc.coloured)-len(lc.plain))
			line = append(append(append(line, p[:i]...), lc.coloured...), p[i+len(lc.plain):]...)
			if _, err := c.w.Write(line); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	return c.w.Write(p)
}
