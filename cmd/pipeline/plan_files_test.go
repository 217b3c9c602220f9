package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPlanFilesMatchingNothing: plan on a files source whose glob matches
// nothing fails at once naming the pattern (it waited for its whole
// timeout before); with allow_empty = true the source is empty and synced.
func TestPlanFilesMatchingNothing(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "p.hcl")
	src := `source "files" "pods" {
  paths       = [%q]
  allow_empty = %v
}
sink "log" "out" {
  input = source.files.pods
  path  = %q
}
`
	pattern := filepath.Join(dir, "none", "*.yaml")
	writeConfig(t, cfg, fmt.Sprintf(src, pattern, false, filepath.Join(dir, "out.log")))
	start := time.Now()
	out, code := planCLI("plan", cfg)
	if code != 1 || !strings.Contains(out, "no file matches "+pattern) || !strings.Contains(out, "allow_empty = true") {
		t.Errorf("plan of an unmatched glob: exit %d, want 1 naming the pattern:\n%s", code, out)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("plan of an unmatched glob took %s", d)
	}
	writeConfig(t, cfg, fmt.Sprintf(src, pattern, true, filepath.Join(dir, "out.log")))
	if out, code := planCLI("plan", cfg); code != 0 {
		t.Errorf("plan of an unmatched glob with allow_empty = true: exit %d, want 0:\n%s", code, out)
	}
}
