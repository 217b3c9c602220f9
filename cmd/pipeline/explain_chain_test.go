package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chainPods are two pods of the files source; backend-2 is removed during
// the test.
const chainPods = `apiVersion: v1
kind: Pod
metadata: {name: backend-1, namespace: shop, labels: {app: backend}}
status: {phase: Running, podIP: 10.244.1.11}
---
apiVersion: v1
kind: Pod
metadata: {name: backend-2, namespace: shop, labels: {app: backend}}
status: {phase: Running, podIP: 10.244.1.12}
`

// chainStep is one optional transform of the flagship's chain.
type chainStep struct {
	name, block string // block has %s for its input
}

var chainSteps = []chainStep{
	{"transform.extract.ips", `transform "extract" "ips" {
  input = %s
  key   = object.status.podIP
  value = { pod = object.metadata.name }
}`},
	{"transform.filter.keep", `transform "filter" "keep" {
  input = %s
  where = record.key != ""
}`},
	{"transform.debounce.batch", `transform "debounce" "batch" {
  input    = %s
  interval = "10ms"
  max_wait = "50ms"
}`},
	{"transform.grace_period.drain", `transform "grace_period" "drain" {
  input = %s
  delay = "1h"
}`},
}

// TestExplainEveryChain runs the flagship's chain (files -> extract ->
// debounce -> grace_period -> sink) with every subset of its transforms,
// plus a filter, and asks explain about a record before and after its pod
// is removed: the answer always names its origin (file and line) and
// every stage, and with grace_period the pending deletion.
func TestExplainEveryChain(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 16 pipelines")
	}
	for mask := range 1 << len(chainSteps) {
		var steps []chainStep
		var names []string
		for i, s := range chainSteps {
			if mask&(1<<i) != 0 {
				steps = append(steps, s)
				names = append(names, strings.Split(s.name, ".")[1])
			}
		}
		name := "files"
		if len(names) > 0 {
			name += "-" + strings.Join(names, "-")
		}
		t.Run(name, func(t *testing.T) { testExplainChain(t, steps) })
	}
}

func testExplainChain(t *testing.T, steps []chainStep) {
	dir := t.TempDir()
	pods := filepath.Join(dir, "pods.yaml")
	if err := os.WriteFile(pods, []byte(chainPods), 0o644); err != nil {
		t.Fatal(err)
	}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "source \"files\" \"pods\" {\n  paths = [%q]\n  poll_interval = \"100ms\"\n}\n", pods)
	input, key, grace := "source.files.pods", "shop/backend-2", false
	for _, s := range steps {
		fmt.Fprintf(&cfg, s.block+"\n", input)
		input = s.name
		switch {
		case strings.HasPrefix(s.name, "transform.extract."):
			key = "10.244.1.12"
		case strings.HasPrefix(s.name, "transform.grace_period."):
			grace = true
		}
	}
	fmt.Fprintf(&cfg, "sink \"log\" \"out\" {\n  input = %s\n  path  = %q\n}\n", input, filepath.Join(dir, "out.log"))
	addr, stop := startRun(t, dir, cfg.String())
	defer stop()
	if r := waitReady(t, http.DefaultClient, "http://"+addr+"/readyz"); !r.Ready {
		t.Fatalf("not ready: %+v", r)
	}

	want := []string{"sink.log.out  " + key + "  appended", "origin   source.files.pods", "pods.yaml", "stage    source.files.pods  shop/backend-2 = {"}
	for _, s := range steps {
		want = append(want, "stage    "+s.name+"  "+key+" = {")
	}
	got := explainText(t, addr, key, 0)
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("explain %s lacks %q:\n%s", key, w, got)
		}
	}

	// Remove backend-2: with grace_period its deletion waits and explain
	// says so, with the origin and stages still there; without, the key
	// leaves every sink.
	if err := os.WriteFile(pods, []byte(strings.SplitN(chainPods, "---\n", 2)[0]), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var out, errb bytes.Buffer
		code := run([]string{"explain", "--against", addr, key}, &out, &errb)
		got = out.String()
		switch {
		case grace && code == 0 && strings.Contains(got, "deletion pending"):
			for _, w := range []string{"origin   source.files.pods", "pods.yaml", "stage    source.files.pods  shop/backend-2 = (absent)",
				"stage    transform.grace_period.drain  " + key + " = {"} {
				if !strings.Contains(got, w) {
					t.Errorf("explain %s after the removal lacks %q:\n%s", key, w, got)
				}
			}
			return
		case !grace && code == 2:
			return
		case code == 1 || time.Now().After(deadline):
			t.Fatalf("explain %s after the removal: exit %d (grace %v)\n%s%s", key, code, grace, got, errb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// explainText runs `pipeline explain` and wants exit code.
func explainText(t *testing.T, addr, key string, code int) string {
	t.Helper()
	var out, errb bytes.Buffer
	if c := run([]string{"explain", "--against", addr, key}, &out, &errb); c != code {
		t.Fatalf("explain %s: exit %d, want %d\n%s%s", key, c, code, out.String(), errb.String())
	}
	return out.String()
}
