package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// TestValidateSameOnEveryCore checks that a configuration whose nodes are
// built on several cores gets the diagnostics it gets on one, in the same
// order: constructors' errors (selector, duration, enum), type mismatches,
// a cycle, and their consequences downstream.
func TestValidateSameOnEveryCore(t *testing.T) {
	src := bigConfig(400)
	for _, r := range []struct {
		old, new string
		n        int
	}{
		{`"app=backend,env in (prod,staging)"`, `"app in (x"`, 5},
		{`interval = "100ms"`, `interval = "soon"`, 7},
		{`"memory"`, `"memoryy"`, 3},
		{"input = transform.debounce.batch_11\n", "input = source.kubernetes.pods_11\n", 1},
		{"input = transform.extract.ips_20\n", "input = source.static.hosts_20\n", 1},
		{"input = transform.extract.ips_30\n", "input = transform.filter.keep_30\n", 1}, // a cycle
	} {
		if strings.Count(src, r.old) < r.n {
			t.Fatalf("the configuration holds %q fewer than %d times", r.old, r.n)
		}
		src = strings.Replace(src, r.old, r.new, r.n)
	}
	path := filepath.Join(t.TempDir(), "big.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	texts := func(diags hcl.Diagnostics) []string {
		out := make([]string, len(diags))
		for i, d := range diags {
			out[i] = fmt.Sprintf("%v %s: %s: %s", d.Severity, d.Subject, d.Summary, d.Detail)
		}
		return out
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	want := texts(load([]string{path}, nil).diags)
	if len(want) < 15 {
		t.Fatalf("want at least 15 diagnostics, got %d:\n%s", len(want), strings.Join(want, "\n"))
	}
	for _, procs := range []int{2, 4} {
		runtime.GOMAXPROCS(procs)
		if got := texts(load([]string{path}, nil).diags); !slices.Equal(got, want) {
			t.Fatalf("with %d processors:\n%s\nwant, as with one:\n%s", procs, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}
