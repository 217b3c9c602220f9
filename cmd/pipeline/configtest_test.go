package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pipeline/pipeline/cmd/pipeline/configtest"
)

// TestExamplesConfigTests runs the config tests of every example, and
// requires that every example has some: users copy them.
func TestExamplesConfigTests(t *testing.T) {
	dirs, err := filepath.Glob("../../examples/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.test.hcl"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Errorf("examples/%s has no config tests: add a *.test.hcl (docs/config-tests.md)", filepath.Base(dir))
			continue
		}
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run([]string{"test", dir}, &stdout, &stderr); code != 0 {
				t.Fatalf("pipeline test %s: exit %d\n%s%s", dir, code, stdout.String(), stderr.String())
			}
		})
	}
}

// TestConfigTestFailures checks what a failing test reports: a diff per
// sink under the file:line:col of its expectation, secrets masked, exit 1,
// and the same in -json; and that nothing real was touched.
func TestConfigTestFailures(t *testing.T) {
	var stdout, stderr bytes.Buffer
	dir := filepath.Join("testdata", "configtest", "failing")
	if code := run([]string{"test", dir}, &stdout, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"ok    " + dir + "/nets.test.hcl: passes (virtual 11s,",
		"FAIL  " + dir + "/nets.test.hcl: fails (virtual 3s,",
		dir + "/nets.test.hcl:32:5: sink.ebpf_map.nets at 1s:\n" +
			"        - 172.16.0.0/12 \"01000000\"   (expected, not held)\n" +
			"        ~ 192.168.0.0/16: expected \"03000000\", held \"02000000\"\n",
		dir + "/nets.test.hcl:36:5: sink.log.out at 2s:\n        + 192.168.0.0/16 {\"id\":2,\"secret\":\"(sensitive)\"}",
		dir + "/nets.test.hcl:38:3: source.static.nets at 3s:\n        update \"10.0.0.0/8\": the source does not hold it",
		"1 passed, 1 failed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "tok-123456") {
		t.Errorf("a sensitive value leaked:\n%s", out)
	}
	if _, err := os.Stat("/nonexistent-pipeline-test"); !os.IsNotExist(err) {
		t.Errorf("a config test touched a real target: %v", err)
	}

	stdout.Reset()
	if code := run([]string{"test", "-json", "-run", "fails", dir}, &stdout, &stderr); code != 1 {
		t.Fatalf("-json: exit %d", code)
	}
	var res struct {
		Passed, Failed int
		Tests          []configtest.Result
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("-json output: %v\n%s", err, stdout.String())
	}
	if res.Passed != 0 || res.Failed != 1 || len(res.Tests) != 1 {
		t.Fatalf("-json: %+v", res)
	}
	var poss []string
	for _, f := range res.Tests[0].Failures {
		poss = append(poss, f.Pos)
	}
	want := []string{dir + "/nets.test.hcl:32:5", dir + "/nets.test.hcl:36:5", dir + "/nets.test.hcl:38:3"}
	if diff := cmp.Diff(want, poss); diff != "" {
		t.Errorf("-json failure positions (-want +got):\n%s", diff)
	}
}

// TestConfigTestInvalid: a test naming a sink the configuration lacks is a
// diagnostic at its line, exit 2; so is a path without tests.
func TestConfigTestInvalid(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"test", filepath.Join("testdata", "configtest", "invalid")}, &stdout, &stderr); code != 2 {
		t.Fatalf("exit %d, want 2\n%s", code, stderr.String())
	}
	if s := stderr.String(); !strings.Contains(s, "Unknown sink") || !strings.Contains(s, "bad.test.hcl:2:3") ||
		!strings.Contains(s, "one of [sink.log.out]") {
		t.Errorf("stderr:\n%s", s)
	}
	stderr.Reset()
	if code := run([]string{"test", t.TempDir()}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "no config tests found") {
		t.Errorf("a directory without tests: exit %d\n%s", code, stderr.String())
	}
}
