package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pipeline/pipeline/cmd/pipeline/schemadoc"
)

// TestReferenceDocsFresh fails when docs/reference.md differs from what the
// registry generates: run `make docs` (or go test ./cmd/pipeline -update).
func TestReferenceDocsFresh(t *testing.T) {
	var buf bytes.Buffer
	schemadoc.WriteMarkdown(&buf, schemadoc.Describe(registry()))
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

// TestDocsStandAlone: the user docs point at nothing a user does not have
// (the project's internal notes, tracker numbers, CI scripts).
func TestDocsStandAlone(t *testing.T) {
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	forbidden := regexp.MustCompile(`\.\./shared|STYLE\.md|STYLE §|\bissues? \d+|issue notes|\.ci/run`)
	for _, p := range append(docs, "../../README.md") {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := forbidden.FindString(line); m != "" {
				t.Errorf("%s:%d mentions %q, which users do not have", filepath.Base(p), i+1, m)
			}
		}
	}
}

// TestDocsLinks: every relative link of the README and docs/*.md names a
// file that exists, so moving a section cannot leave a dead link.
func TestDocsLinks(t *testing.T) {
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	link := regexp.MustCompile(`\]\(([^)\s#]+)(#[^)\s]*)?\)`)
	for _, p := range append(docs, "../../README.md") {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(p), target)); err != nil {
				t.Errorf("%s links to %s, which does not exist", filepath.Base(p), target)
			}
		}
	}
}
