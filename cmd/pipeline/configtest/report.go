package configtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/pipeline/pipeline/cmd/pipeline/view"
)

// testSuite is the tests of one configuration.
type testSuite struct {
	config []string // the configuration's paths (its directory)
	files  []string // its *.test.hcl files
}

// findSuites maps each PATH to a configuration and its test files.
func findSuites(paths []string) ([]testSuite, error) {
	byDir := map[string]*testSuite{}
	var order []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("test path: %w", err)
		}
		dir, files := p, []string(nil)
		if st.IsDir() {
			files, _ = filepath.Glob(filepath.Join(p, "*.test.hcl"))
		} else if strings.HasSuffix(p, ".test.hcl") {
			dir, files = filepath.Dir(p), []string{p}
		} else {
			return nil, fmt.Errorf("%s: give a configuration directory or a *.test.hcl file", p)
		}
		s := byDir[dir]
		if s == nil {
			s = &testSuite{config: []string{dir}}
			byDir[dir] = s
			order = append(order, dir)
		}
		s.files = append(s.files, files...)
	}
	out := make([]testSuite, 0, len(order))
	for _, d := range order {
		sort.Strings(byDir[d].files)
		out = append(out, *byDir[d])
	}
	return out, nil
}

// Options say how RunPaths runs and reports the tests.
type Options struct {
	Load   Load
	Filter string // run only tests whose name contains it
	JSON   bool   // report as JSON
}

// RunPaths runs the tests of the configurations and test files at paths
// (see findSuites), writes what `pipeline test` writes, and returns its
// exit status: 0 every test passed, 1 a test failed, 2 a configuration or
// test file is invalid or no test was found.
func RunPaths(ctx context.Context, stdout, stderr io.Writer, paths []string, opts Options) int {
	filter, asJSON := opts.Filter, opts.JSON
	suites, err := findSuites(paths)
	if err != nil {
		fmt.Fprintf(stderr, "Error: %s\n", err)
		return 2
	}
	var results []*Result
	invalid, found := false, 0
	for _, s := range suites {
		if len(s.files) == 0 {
			if !asJSON {
				fmt.Fprintf(stdout, "?     %s (no *.test.hcl files)\n", s.config[0])
			}
			continue
		}
		p := hclparse.NewParser()
		for _, f := range s.files {
			tests, diags := ParseFile(p, f)
			if diags.HasErrors() {
				view.WriteDiagsText(stderr, p.Files(), diags)
				invalid = true
				continue
			}
			for _, t := range tests {
				if filter != "" && !strings.Contains(t.Name, filter) {
					continue
				}
				found++
				res, l := Run(ctx, opts.Load, s.config, t)
				if l.Diags.HasErrors() {
					files := l.Files
					if files == nil {
						files = map[string]*hcl.File{}
					}
					for name, f := range p.Files() {
						files[name] = f
					}
					view.WriteDiagsText(stderr, files, l.Diags)
					invalid = true
					continue
				}
				results = append(results, res)
				if !asJSON {
					WriteResult(stdout, res)
				}
			}
		}
	}
	return finishTests(stdout, stderr, results, invalid, found, asJSON)
}

func finishTests(stdout, stderr io.Writer, results []*Result, invalid bool, found int, asJSON bool) int {
	passed, failed := 0, 0
	for _, r := range results {
		if r.Passed {
			passed++
		} else {
			failed++
		}
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if results == nil {
			results = []*Result{}
		}
		_ = enc.Encode(struct {
			Passed  int       `json:"passed"`
			Failed  int       `json:"failed"`
			Invalid bool      `json:"invalid"`
			Tests   []*Result `json:"tests"`
		}{passed, failed, invalid, results})
	} else {
		fmt.Fprintf(stdout, "%d passed, %d failed\n", passed, failed)
	}
	switch {
	case invalid:
		return 2
	case found == 0:
		fmt.Fprintln(stderr, "Error: no config tests found: write NAME.test.hcl files beside the configuration (see `pipeline test --help`)")
		return 2
	case failed > 0:
		return 1
	}
	return 0
}

// WriteResult prints one test's result for people: a line, and under a
// failure one block per expectation, headed by the file:line:col of the
// expectation.
func WriteResult(w io.Writer, r *Result) {
	w = view.PrintableWriter{W: w} // record keys and values
	if r.Passed {
		fmt.Fprintf(w, "ok    %s: %s (virtual %s, took %s)\n", r.File, r.Name, r.Virtual, r.Elapsed)
		return
	}
	fmt.Fprintf(w, "FAIL  %s: %s (virtual %s, took %s)\n", r.File, r.Name, r.Virtual, r.Elapsed)
	for _, f := range r.Failures {
		head := f.Pos + ":"
		if f.Node != "" {
			head += fmt.Sprintf(" %s at %s:", f.Node, f.At)
		}
		fmt.Fprintf(w, "    %s\n", head)
		if f.Message != "" {
			fmt.Fprintf(w, "        %s\n", f.Message)
		}
		for _, e := range f.Missing {
			fmt.Fprintf(w, "        - %s %s   (expected, not held)\n", e.Key, e.Value)
		}
		for _, e := range f.Unexpected {
			fmt.Fprintf(w, "        + %s %s   (held, not expected)\n", e.Key, e.Value)
		}
		for _, c := range f.Changed {
			fmt.Fprintf(w, "        ~ %s: expected %s, held %s\n", c.Key, c.Want, c.Got)
		}
		if f.GotWrites != nil {
			fmt.Fprintf(w, "        writes: expected %v, wrote %v\n", f.WantWrites, f.GotWrites)
		}
	}
}
