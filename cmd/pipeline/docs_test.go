package main

import (
	"bytes"
	"os"
	"testing"
)

// TestReferenceDocsFresh fails when docs/reference.md differs from what the
// registry generates: run `make docs` (or go test ./cmd/pipeline -update).
func TestReferenceDocsFresh(t *testing.T) {
	var buf bytes.Buffer
	writeMarkdown(&buf, describe(registry()))
	const path = "../../docs/reference.md"
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, buf.Bytes()) {
		t.Fatal("docs/reference.md is stale: run `make docs`")
	}
}
