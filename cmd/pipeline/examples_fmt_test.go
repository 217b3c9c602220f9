package main

import (
	"bytes"
	"path/filepath"
	"testing"
)

// TestExamplesFormatted: `pipeline fmt -check examples/*` passes, as the
// README's first steps have a new user run it (examples/haproxy/main.hcl
// did not).
func TestExamplesFormatted(t *testing.T) {
	dirs, err := filepath.Glob("../../examples/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("examples: %v %v", dirs, err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"fmt", "-check", "-diff"}, dirs...), &stdout, &stderr); code != 0 {
		t.Errorf("pipeline fmt -check examples/*: exit %d; run `pipeline fmt -write` on:\n%s%s", code, stdout.String(), stderr.String())
	}
}
