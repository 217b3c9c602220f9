package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/cmd/pipeline/admin"
	"github.com/pipeline/pipeline/cmd/pipeline/inspect"
	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/redact"
)

// podIPs reads pods from the YAML files in %[1]s and keys them by IP.
const podIPs = `
source "files" "pods" {
  paths         = ["%[1]s/*.yaml"]
  allow_empty   = true
  poll_interval = "200ms"
}
transform "extract" "ips" {
  input = source.files.pods
  key   = object.status.podIP
  value = { pod = object.metadata.name }
}
`

// filesToLog writes podIPs to a log sink at %[2]s.
const filesToLog = podIPs + `
sink "log" "out" {
  input  = transform.extract.ips
  path   = "%[2]s"
  format = "json"
}
`

// writePods replaces the manifests with one pod per IP, atomically.
func writePods(t *testing.T, dir string, ips ...string) {
	t.Helper()
	var b strings.Builder
	for _, ip := range ips {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p-%s, namespace: ns}\nstatus: {podIP: %q}\n", ip, ip)
	}
	tmp := filepath.Join(dir, ".pods.tmp")
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "pods.yaml")); err != nil {
		t.Fatal(err)
	}
}

// startFilesPipeline runs filesToLog and returns its admin address, the
// manifests directory and the log sink's file.
func startFilesPipeline(t *testing.T) (addr, pods, out string) {
	t.Helper()
	return startPodsPipeline(t, filesToLog)
}

// startPodsPipeline runs config, a format whose two %s are the manifests
// directory and the log sink's file, as startFilesPipeline does.
func startPodsPipeline(t *testing.T, config string) (addr, pods, out string) {
	t.Helper()
	dir := t.TempDir()
	pods, out = filepath.Join(dir, "pods"), filepath.Join(dir, "out.log")
	if err := os.Mkdir(pods, 0o755); err != nil {
		t.Fatal(err)
	}
	writePods(t, pods, "10.0.0.1")
	cfg := filepath.Join(dir, "p.hcl")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(config, pods, out)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrc, done := make(chan string, 1), make(chan error, 1)
	var stderr bytes.Buffer
	go func() {
		done <- runPipeline(ctx, io.Discard, &stderr, []string{cfg}, runFlags{listen: "127.0.0.1:0", logFormat: "json",
			logLevel: "info", onListen: func(a string) { addrc <- a }})
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("run ended early: %v\n%s", err, stderr.String())
	}
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	waitReady(t, client, "http://"+addr+"/readyz")
	return addr, pods, out
}

// openTap opens /tap and returns its body once the server attached the taps.
func openTap(t *testing.T, ctx context.Context, addr, query string) io.ReadCloser {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/tap?"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/tap?%s: %s", query, resp.Status)
	}
	return resp.Body
}

// TestTapShowsExactlyWhatTheSinkApplied taps the log sink of a running
// pipeline and compares the stream with the sink's own file.
func TestTapShowsExactlyWhatTheSinkApplied(t *testing.T) {
	addr, pods, out := startFilesPipeline(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body := openTap(t, ctx, addr, "node=sink.log.out&rate=0")
	defer body.Close()
	before := len(logLines(t, out))

	writePods(t, pods, "10.0.0.1", "10.0.0.2", "10.0.0.3")
	waitLines(t, out, before+2)
	writePods(t, pods, "10.0.0.2", "10.0.0.3")
	waitLines(t, out, before+3)

	var got bytes.Buffer
	if err := inspect.PrintTap(ctx, &got, body, inspect.TapOptions{JSON: true, Count: 3}); err != nil {
		t.Fatal(err)
	}
	var tapped, applied []string
	for _, l := range strings.Split(strings.TrimSpace(got.String()), "\n") {
		var tl admin.TapLine
		if err := json.Unmarshal([]byte(l), &tl); err != nil {
			t.Fatal(err)
		}
		if tl.Node != "sink.log.out" {
			t.Errorf("line of node %q", tl.Node)
		}
		tapped = append(tapped, fmt.Sprintf("%s %s %s", tl.Op, tl.Key, tl.Value))
	}
	for _, l := range logLines(t, out)[before:] {
		var ll struct {
			Op, Key string
			Value   json.RawMessage
		}
		if err := json.Unmarshal([]byte(l), &ll); err != nil {
			t.Fatal(err)
		}
		applied = append(applied, fmt.Sprintf("%s %s %s", ll.Op, ll.Key, ll.Value))
	}
	if diff := cmp.Diff(applied, tapped); diff != "" {
		t.Errorf("tap differs from what the sink applied (-sink +tap):\n%s", diff)
	}
}

// flagshipFanIn is the flagship chain (files -> extract -> debounce ->
// grace_period) and a list of networks read from a file, both into one
// log sink.
const flagshipFanIn = podIPs + `
transform "debounce" "calm" {
  input    = transform.extract.ips
  interval = "10ms"
}
transform "grace_period" "drain" {
  input = transform.debounce.calm
  delay = "10ms"
}
source "files" "nets" {
  paths         = ["%[1]s/*.txt"]
  format        = "lines"
  allow_empty   = true
  poll_interval = "200ms"
}
sink "log" "out" {
  inputs = [transform.grace_period.drain, source.files.nets]
  path   = "%[2]s"
  format = "json"
}
`

// TestTapFanInSinkNamesInputs taps a sink with two inputs: each upsert
// line names the source its record came from, in --json and readable
// form, as a tap of a fan-in transform does.
func TestTapFanInSinkNamesInputs(t *testing.T) {
	addr, dir, out := startPodsPipeline(t, flagshipFanIn)
	waitLines(t, out, 1) // the first pod
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body := openTap(t, ctx, addr, "node=sink.log.out&rate=0")
	defer body.Close()

	writePods(t, dir, "10.0.0.1", "10.0.0.2")
	if err := os.WriteFile(filepath.Join(dir, "nets.txt"), []byte("10.9.0.0/16\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := inspect.PrintTap(ctx, &got, body, inspect.TapOptions{JSON: true, Count: 2}); err != nil {
		t.Fatal(err)
	}
	from := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(got.String()), "\n") {
		var l admin.TapLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		if l.Op != "upsert" || l.Origin == nil {
			t.Fatalf("tap line %s: want an upsert with its origin", line)
		}
		from[l.Key] = l.Origin.Source + " " + strings.Fields(filepath.Base(l.Origin.File))[0] // "pods.yaml document 2"
		if r := inspect.ReadableTap(l); !strings.HasSuffix(r, "  (from "+l.Origin.Source+")") {
			t.Errorf("readable line %q names no input", r)
		}
	}
	want := map[string]string{"10.0.0.2": "source.files.pods pods.yaml", "10.9.0.0/16": "source.files.nets nets.txt"}
	if diff := cmp.Diff(want, from); diff != "" {
		t.Errorf("the input of each line (-want +got):\n%s", diff)
	}
}

// TestTapSamplesAndLimits opens two streams on one node: every 2nd delta,
// and at most 2 lines a second (the rest reported as skipped).
func TestTapSamplesAndLimits(t *testing.T) {
	addr, pods, _ := startFilesPipeline(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sampled := openTap(t, ctx, addr, "node=transform.extract.ips&sample=2&rate=0")
	defer sampled.Close()
	limited := openTap(t, ctx, addr, "node=transform.extract.ips&rate=2")
	defer limited.Close()
	ips := []string{"10.0.0.1"}
	for i := 2; i <= 11; i++ {
		ips = append(ips, fmt.Sprintf("10.0.0.%d", i))
	}
	writePods(t, pods, ips...) // 10 new keys in one change

	var s bytes.Buffer
	if err := inspect.PrintTap(ctx, &s, sampled, inspect.TapOptions{Count: 5}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(s.String(), " + 10.0.0."); n != 5 {
		t.Errorf("sample=2 of 10 upserts printed %d:\n%s", n, s.String())
	}
	sc := bufio.NewScanner(limited)
	var lines []admin.TapLine
	for sc.Scan() {
		var l admin.TapLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
		if l.Op == "skipped" {
			break
		}
	}
	if len(lines) != 3 || lines[2].Limited != 8 {
		t.Errorf("rate=2 of 10: want 2 deltas then a skipped line with limited=8, got %+v", lines)
	}
	if _, err := (&http.Client{}).Get("http://" + addr + "/tap?node=sink.log.nope"); err != nil {
		t.Fatal(err)
	}
	err := inspect.Tap(ctx, io.Discard, []string{"sink.log.nope"}, inspect.TapOptions{Against: addr, Rate: 1, Sample: 1})
	if err == nil || !strings.Contains(err.Error(), "no such node") {
		t.Errorf("tapping an unknown node: %v", err)
	}
	err = inspect.Tap(ctx, io.Discard, []string{"sink.log.ot"}, inspect.TapOptions{Against: addr, Rate: 1, Sample: 1})
	if err == nil || !strings.Contains(err.Error(), "did you mean sink.log.out?") {
		t.Errorf("tapping a mistyped node: %v", err)
	}
}

// TestTapLineMasksSecrets: marked (sensitive) values and strings holding a
// secret never leave the process.
func TestTapLineMasksSecrets(t *testing.T) {
	secrets := redact.New([]string{"hunter22"})
	v := cty.ObjectVal(map[string]cty.Value{
		"token": cty.StringVal("s3cret-value").Mark("sensitive"),
		"note":  cty.StringVal("pw=hunter22"),
		"n":     cty.NumberIntVal(7),
		"ips":   cty.ListVal([]cty.Value{cty.StringVal("10.0.0.1")}),
	})
	l := admin.NewTapLine(engine.TapEvent{Node: "source.static.s", Key: "hunter22", Value: v}, secrets)
	want := `{"ips":["10.0.0.1"],"n":7,"note":"pw=(sensitive)","token":"(sensitive)"}`
	if string(l.Value) != want || l.Key != redact.Mask {
		t.Errorf("line = %s %s, want key masked and %s", l.Key, l.Value, want)
	}
	if r := inspect.ReadableTap(l); strings.Contains(r, "hunter22") || strings.Contains(r, "s3cret") {
		t.Errorf("readable form leaks: %s", r)
	}
}

// TestTapLineNamesGenerationAndOrigin: the per-node counter says it is the
// collection generation (the config generation is /reloads'), and an
// upsert names where its record came from: through a fan-in, which
// input's data it is.
func TestTapLineNamesGenerationAndOrigin(t *testing.T) {
	ev := engine.TapEvent{Node: "transform.extract.zone_a", Key: "10.0.0.1", Value: cty.StringVal("db-1"), CollectionGeneration: 4,
		Origin: &node.Origin{Source: "source.files.hosts", File: "data/hosts.csv", Line: 2}}
	b, err := json.Marshal(admin.NewTapLine(ev, redact.New(nil)))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"time": "0001-01-01T00:00:00Z", "node": "transform.extract.zone_a", "op": "upsert", "key": "10.0.0.1", "value": "db-1",
		"collection_generation": 4.0, "origin": map[string]any{"source": "source.files.hosts", "file": "data/hosts.csv", "line": 2.0}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("tap line (-want +got):\n%s", d)
	}
	if r := inspect.ReadableTap(admin.NewTapLine(ev, redact.New(nil))); !strings.HasSuffix(r, `+ 10.0.0.1 "db-1"  (from source.files.hosts)`) {
		t.Errorf("readable form %q does not name the source", r)
	}
}

func logLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func waitLines(t *testing.T, path string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(logLines(t, path)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d lines after 20s, want %d", path, len(logLines(t, path)), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
