package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestMakeBuildSaysWhatItDoes: `make build` says up front what it builds
// and why a first build is slow, and shows progress (it printed nothing
// for minutes on a cold build cache). make -n prints the recipe without
// running it.
func TestMakeBuildSaysWhatItDoes(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		missingInCI(t, "no make: %v", err)
	}
	for _, target := range []string{"build", "build-demo"} {
		out, err := exec.Command("make", "-n", "-C", "../..", target).CombinedOutput()
		if err != nil {
			t.Fatalf("make -n %s: %v\n%s", target, err, out)
		}
		for _, want := range []string{"==> go build", "A first build compiles", "build cache", " build -v ", "packages compiled", "set -o pipefail"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("make %s does not print %q:\n%s", target, want, out)
			}
		}
	}
}
