package main

import (
	"path/filepath"
	"testing"
)

// TestExamplesValidate validates every examples/*.hcl on its own, as
// `pipeline validate examples/*.hcl` does.
func TestExamplesValidate(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.hcl")
	if err != nil || len(files) < 6 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			l := load([]string{f}, nil)
			for _, d := range l.diags {
				t.Errorf("%s", d)
			}
		})
	}
}
