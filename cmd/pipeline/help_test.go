package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestHelpNamesEveryNodeType: `pipeline help` names every node type of the
// registry under its kind, so the list cannot go stale when a type is
// added (it named only some sinks).
func TestHelpNamesEveryNodeType(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"help"}, &out, &errb); code != 0 {
		t.Fatalf("pipeline help: exit %d\n%s", code, errb.String())
	}
	text := strings.Join(strings.Fields(out.String()), " ") // unwrapped
	for _, s := range registry().All() {
		i := strings.Index(text, string(s.Kind)+"s (")
		if i < 0 {
			t.Fatalf("help has no list of %ss:\n%s", s.Kind, out.String())
		}
		list, _, _ := strings.Cut(text[i+len(s.Kind)+3:], ")")
		if !strings.Contains(", "+list+", ", ", "+s.Type+", ") {
			t.Errorf("help lists %ss (%s) without %q", s.Kind, list, s.Type)
		}
	}
	intro, _, _ := strings.Cut(out.String(), "\n\n")
	for _, line := range strings.Split(intro, "\n") {
		if len(line) > 100 {
			t.Errorf("help line over 100 columns: %q", line)
		}
	}
}
