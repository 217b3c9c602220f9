package main

import (
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

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"

	"github.com/pipeline/pipeline/engine"
)

const staticToLog = `
source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}
sink "log" "out" {
  input = source.static.nets
  path  = "out.log"
}
`

// TestRunServesMetricsAndHealth runs the pipeline, scrapes /metrics, parses
// it, lints it as promtool check metrics does, and checks /healthz and /readyz.
func TestRunServesMetricsAndHealth(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"), goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
	dir := t.TempDir()
	cfg := filepath.Join(dir, "p.hcl")
	if err := os.WriteFile(cfg, []byte(staticToLog), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	var stderr bytes.Buffer
	go func() {
		done <- runPipeline(ctx, io.Discard, &stderr, []string{cfg}, runFlags{listen: "127.0.0.1:0", logFormat: "json",
			logLevel: "info", onListen: func(a string) { addrc <- a }})
	}()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("run ended early: %v\n%s", err, stderr.String())
	}
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()

	ready := waitReady(t, client, "http://"+addr+"/readyz")
	if len(ready.Nodes) != 2 || !ready.Ready {
		t.Fatalf("readyz: %+v", ready)
	}
	if body := get(t, client, "http://"+addr+"/healthz"); strings.TrimSpace(body) != "ok" {
		t.Fatalf("healthz = %q", body)
	}
	metrics := get(t, client, "http://"+addr+"/metrics")
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(metrics))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	for _, name := range []string{"pipeline_node_records", "pipeline_node_deltas_total", "pipeline_node_queue_depth",
		"pipeline_node_overflow_resyncs_total", "pipeline_sink_writes_total", "pipeline_sink_reconcile_duration_seconds",
		"pipeline_change_latency_seconds", "pipeline_config_generation", "pipeline_build_info",
		"pipeline_node_restarts_total", "pipeline_config_reloads_total"} {
		if _, ok := families[name]; !ok {
			t.Errorf("metric %s missing", name)
		}
	}
	// Every node has every node metric from the start, at 0 when nothing happened.
	for _, name := range []string{"pipeline_node_records", "pipeline_node_deltas_total", "pipeline_node_queue_depth",
		"pipeline_node_overflow_resyncs_total", "pipeline_node_restarts_total"} {
		for _, addr := range []string{"source.static.nets", "sink.log.out"} {
			if !hasNode(families[name], addr) {
				t.Errorf("metric %s has no series for %s", name, addr)
			}
		}
	}
	problems, err := promlint.New(strings.NewReader(metrics)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "pipeline_") {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	// The log says what it counts: nodes, and what each sink round wrote.
	for _, want := range []string{`"msg":"running","nodes":2,"config_generation":1`,
		`"msg":"full reconcile","node":"sink.log.out","upserts":1,"deletes":0,"failed":0,"duration":`} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, stderr.String())
		}
	}
	out, _ := os.ReadFile(filepath.Join(dir, "out.log"))
	if got := string(out); got != "+ 10.0.0.0/8 {\"network\":\"internal\"}\n" {
		t.Fatalf("log sink wrote %q", got)
	}
}

func hasNode(mf *dto.MetricFamily, addr string) bool {
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "node" && l.GetValue() == addr {
				return true
			}
		}
	}
	return false
}

func waitReady(t *testing.T, c *http.Client, url string) engine.Readiness {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		var r engine.Readiness
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("decode readyz: %v", err)
		}
		if resp.StatusCode == http.StatusOK || time.Now().After(deadline) {
			if (resp.StatusCode == http.StatusOK) != r.Ready {
				t.Fatalf("readyz status %d but ready=%v", resp.StatusCode, r.Ready)
			}
			return r
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func get(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestReadyzBeforeSync: a source that cannot reach its API server never
// syncs, so /readyz answers 503 and names it; the token appears nowhere.
func TestReadyzBeforeSync(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "p.hcl")
	const token = "tok-8c1f2e9a7b3d"
	src := `
cluster "down" {
  endpoint = "https://127.0.0.1:1"
  token    = "` + token + `"
}
source "kubernetes" "pods" {
  cluster = cluster.down
  resource = "pods"
}
sink "log" "out" {
  input = source.kubernetes.pods
  path  = "out.log"
}
`
	if err := os.WriteFile(cfg, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	var stderr bytes.Buffer
	go func() {
		done <- runPipeline(ctx, io.Discard, &stderr, []string{cfg}, runFlags{listen: "127.0.0.1:0", logFormat: "text",
			logLevel: "debug", onListen: func(a string) { addrc <- a }})
	}()
	addr := <-addrc
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	time.Sleep(500 * time.Millisecond) // let the source try and fail
	resp, err := client.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	var r engine.Readiness
	_ = json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || r.Ready {
		t.Fatalf("readyz %d %+v, want 503", resp.StatusCode, r)
	}
	found := false
	for _, n := range r.Nodes {
		if n.Address == "source.kubernetes.pods" {
			found = !n.Ready && !n.Synced
		}
	}
	if !found {
		t.Fatalf("readyz does not name the unsynced source: %+v", r)
	}
	metrics := get(t, client, "http://"+addr+"/metrics")
	cancel()
	<-done
	for what, text := range map[string]string{"logs": stderr.String(), "metrics": metrics, "readyz": fmt.Sprint(r)} {
		if strings.Contains(text, token) {
			t.Errorf("the token leaked into %s", what)
		}
	}
}
