package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"
)

// hubAndAgent is a hub (static -> nats_kv with an embedded server) and an
// agent (nats_kv -> log) in one process, the agent connecting over TCP.
const hubAndAgent = `
source "static" "ips" {
  records = { "10.0.0.1" = { pod = "a" }, "fd00::1" = { pod = "b" } }
}
sink "nats_kv" "hub" {
  input      = source.static.ips
  bucket     = "pod-ips"
  key_prefix = "v1."
  embedded {
    listen    = "127.0.0.1:%d"
    store_dir = "nats"
  }
}
source "nats_kv" "agent" {
  url        = "nats://127.0.0.1:%d"
  bucket     = "pod-ips"
  key_prefix = "v1."
}
sink "log" "out" {
  input  = source.nats_kv.agent
  path   = "out.log"
  format = "json"
}
`

// TestRunEmbeddedNATS runs hub and agent against the embedded server and
// checks the agent's sink receives the hub's records and /readyz is ready.
func TestRunEmbeddedNATS(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"), goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	run := launch(t, dir, fmt.Sprintf(hubAndAgent, port, port))
	addr := run.addr
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(15 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(dir, "out.log"))
		if strings.Contains(string(b), `"key":"10.0.0.1"`) && strings.Contains(string(b), `"key":"fd00::1"`) {
			break
		}
		if time.Now().After(deadline) {
			_ = run.stop()
			t.Fatalf("agent never logged the hub's records; out.log:\n%s\nstderr:\n%s", b, run.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := waitReady(t, client, "http://"+addr+"/readyz"); !r.Ready {
		t.Errorf("not ready: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "nats", "jetstream")); err != nil {
		t.Errorf("store_dir not used: %v", err)
	}
	metrics := get(t, client, "http://"+addr+"/metrics")
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(metrics))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	for _, name := range []string{"pipeline_node_nats_connected", "pipeline_node_nats_reconnects_total",
		"pipeline_source_nats_kv_revision_lag", "pipeline_source_nats_kv_skipped_total",
		"pipeline_sink_nats_kv_full_total", "pipeline_sink_nats_kv_unknown_outcomes_total"} {
		if _, ok := families[name]; !ok {
			t.Errorf("metric %s missing", name)
		}
	}
	for _, m := range families["pipeline_node_nats_connected"].GetMetric() {
		if m.GetGauge().GetValue() != 1 {
			t.Errorf("pipeline_node_nats_connected %v = %v", m.GetLabel(), m.GetGauge().GetValue())
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
	if err := run.stop(); err != nil {
		t.Fatalf("run: %v\n%s", err, run.stderr.String())
	}
}
