package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// auditChangesConfig is static -> grace_period -> audit with delay as given.
func auditChangesConfig(dir, delay string, keys ...string) string {
	recs := ""
	for _, k := range keys {
		recs += fmt.Sprintf("    %q = { v = %q }\n", k, k)
	}
	return fmt.Sprintf(`source "static" "s" {
  records = {
%s  }
}
transform "grace_period" "drain" {
  input = source.static.s
  delay = %q
}
sink "audit" "trail" {
  input = transform.grace_period.drain
  path  = %q
  fsync = "always"
}
`, recs, delay, filepath.Join(dir, "trail.jsonl"))
}

type trailLine struct {
	Op     string `json:"op"`
	Node   string `json:"node"`
	Key    string `json:"key"`
	Gen    uint64 `json:"config_generation"`
	Reason string `json:"reason"`
}

func trailLines(t *testing.T, dir string) []trailLine {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "trail.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []trailLine
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var x trailLine
		if err := json.Unmarshal(l, &x); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, x)
	}
	return out
}

// dataLines are the upsert and delete lines of lines, as "op key".
func dataLines(lines []trailLine) []string {
	var out []string
	for _, l := range lines {
		if l.Op == "upsert" || l.Op == "delete" {
			out = append(out, l.Op+" "+l.Key)
		}
	}
	return out
}

// TestAuditRecordsOnlyChanges: a restart, and a reload that changes only
// the grace period's delay (rebuilding the sink downstream of it), write no
// upsert line for unchanged keys; a key removed while the pipeline was down
// is written as a delete; the open line of the rebuilt sink carries the
// generation being loaded.
func TestAuditRecordsOnlyChanges(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "p.hcl")
	saveFile(t, cfg, auditChangesConfig(dir, "1m", "a", "b"))
	w := runWatched(t, cfg)
	eventually(t, "two upserts", func() bool { return len(dataLines(trailLinesQuiet(dir))) == 2 })

	// A reload changing only the delay.
	saveFile(t, cfg, auditChangesConfig(dir, "2m", "a", "b"))
	w.settle(t, 1)
	w.cancel()
	if err := <-w.done; err != nil {
		t.Fatalf("run: %v", err)
	}
	w.done <- nil // for the cleanup
	lines := trailLines(t, dir)
	if got := dataLines(lines); len(got) != 2 {
		t.Fatalf("after a reload of the delay: data lines %v, want the 2 first upserts only", got)
	}
	if got := openGens(lines); fmt.Sprint(got) != "[1 2]" {
		t.Errorf("open lines carry config generations %v, want [1 2] (start, the reload's rebuild)", got)
	}

	// A restart with b gone and c new: one delete, one upsert, nothing for a.
	saveFile(t, cfg, auditChangesConfig(dir, "0s", "a", "c"))
	_ = runWatched(t, cfg)
	eventually(t, "the restart's lines", func() bool { return len(dataLines(trailLinesQuiet(dir))) >= 4 })
	got := dataLines(trailLines(t, dir))
	want := []string{"upsert a", "upsert b", "upsert c", "delete b"}
	if fmt.Sprint(sorted(got[2:])) != fmt.Sprint(sorted(want[2:])) || len(got) != 4 {
		t.Fatalf("after a restart: data lines %v, want %v", got, want)
	}
}

func trailLinesQuiet(dir string) []trailLine {
	b, _ := os.ReadFile(filepath.Join(dir, "trail.jsonl"))
	var out []trailLine
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var x trailLine
		if json.Unmarshal(l, &x) == nil {
			out = append(out, x)
		}
	}
	return out
}

func openGens(lines []trailLine) []uint64 {
	var out []uint64
	for _, l := range lines {
		if l.Op == "open" {
			out = append(out, l.Gen)
		}
	}
	return out
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
