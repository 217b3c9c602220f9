package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExamplesValidate validates every example directory on its own, as
// `pipeline validate examples/*` does, and requires that examples/ holds
// only directories: each is one configuration, as in Terraform.
func TestExamplesValidate(t *testing.T) {
	entries, err := os.ReadDir("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if !e.IsDir() {
			t.Errorf("examples/%s: give each example its own directory", e.Name())
			continue
		}
		dirs = append(dirs, filepath.Join("../../examples", e.Name()))
	}
	if len(dirs) < 6 {
		t.Fatalf("examples: %v", dirs)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			l := load([]string{dir}, nil)
			for _, d := range l.diags {
				t.Errorf("%s", d)
			}
		})
	}
	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"validate"}, dirs...), &stdout, &stderr); code != 0 {
		t.Fatalf("pipeline validate examples/*: exit %d\n%s", code, stderr.String())
	}
	if n := strings.Count(stdout.String(), "Success!"); n != len(dirs) {
		t.Errorf("validate examples/* printed %d successes for %d examples:\n%s", n, len(dirs), stdout.String())
	}
}
