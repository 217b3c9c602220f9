package configtest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
)

// TestParseErrors: each mistake of testdata/invalid.test.hcl is reported
// at the line that says so (# ERROR: summary), and nothing else is.
func TestParseErrors(t *testing.T) {
	path := filepath.Join("testdata", "invalid.test.hcl")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^.*# ERROR: (.*)$`).FindAllSubmatchIndex(src, -1) {
		line := 1
		for _, c := range src[:m[0]] {
			if c == '\n' {
				line++
			}
		}
		want[fmt.Sprint(line)] = string(src[m[2]:m[3]])
	}
	_, diags := ParseFile(hclparse.NewParser(), path)
	got := map[string]string{}
	for _, d := range diags {
		got[fmt.Sprint(d.Subject.Start.Line)] = d.Summary
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diagnostics by line (-want +got):\n%s", diff)
	}
}

// TestParseOrder: steps run in the order of their times, and at one time
// in the order written, givens and expects mixed.
func TestParseOrder(t *testing.T) {
	tests, diags := Parse([]byte(`
test "t" {
  expect "sink.log.out" {
    at   = "2s"
    keys = []
  }
  given "source.static.s" {
    at  = "1s"
    add = { a = 1 }
  }
  expect "sink.log.out" {
    at   = "1s"
    keys = ["a"]
  }
  given "source.static.s" {
    at     = "1s"
    delete = ["a"]
  }
}
`), "order.test.hcl")
	if diags.HasErrors() || len(tests) != 1 {
		t.Fatalf("%d tests: %s", len(tests), diags.Error())
	}
	var got []string
	for _, s := range tests[0].steps {
		got = append(got, fmt.Sprintf("%s %v %d", s.at, s.expect, s.decl.Start.Line))
	}
	want := []string{fmt.Sprintf("%s false 7", time.Second), fmt.Sprintf("%s true 11", time.Second),
		fmt.Sprintf("%s false 15", time.Second), fmt.Sprintf("%s true 3", 2*time.Second)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}

// TestCheckAddresses: a given names a source, an expect a sink.
func TestCheckAddresses(t *testing.T) {
	src := []byte("test \"t\" {\n  given \"sink.log.out\" {\n    at = \"0s\"\n    add = {}\n  }\n  expect \"sink.log.out\" {\n    at = \"0s\"\n    keys = []\n  }\n}\n")
	if diags := Check("a.test.hcl", src, nil); diags.HasErrors() {
		t.Fatalf("without addresses: %s", diags.Error())
	}
	diags := Check("a.test.hcl", src, []string{"source.static.s", "sink.log.out"})
	if len(diags) != 1 || diags[0].Summary != "Unknown source" || diags[0].Subject.Start.Line != 2 ||
		diags[0].Detail != "A given block names a source of the configuration: one of [source.static.s]." {
		t.Errorf("diagnostics: %v", diags)
	}
}

// TestParseRefusesDeepNesting: a test file nested deeper than the parser
// can recurse is refused as a configuration is, not a crash.
func TestParseRefusesDeepNesting(t *testing.T) {
	src := "test \"t\" {\n  given \"source.s.s\" {\n    at = \"0s\"\n    add = { a = " +
		strings.Repeat("[", 200_000) + strings.Repeat("]", 200_000) + " }\n  }\n}\n"
	path := filepath.Join(t.TempDir(), "deep.test.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, parse := range map[string]func() hcl.Diagnostics{
		"ParseFile": func() hcl.Diagnostics { _, d := ParseFile(hclparse.NewParser(), path); return d },
		"Parse":     func() hcl.Diagnostics { _, d := Parse([]byte(src), path); return d },
	} {
		if diags := parse(); len(diags) != 1 || diags[0].Summary != "Configuration nested too deeply" {
			t.Errorf("%s: %v", name, diags)
		}
	}
}
