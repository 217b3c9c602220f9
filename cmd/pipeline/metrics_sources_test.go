package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// metricValue reads one sample of the exposition at addr; -1 when absent.
func metricValue(t *testing.T, addr, name, node string) float64 {
	t.Helper()
	body := get(t, http.DefaultClient, "http://"+addr+"/metrics")
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\{[^}]*node="` + regexp.QuoteMeta(node) + `"[^}]*\} (\S+)$`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// TestMetricsPerSourceType: with a files source and a static one, a sink's
// pipeline_node_records is what its target holds (it was 0 for every sink),
// and an edit of a file is timed in pipeline_change_latency_seconds (its
// count stayed 0 for files).
func TestMetricsPerSourceType(t *testing.T) {
	dir := t.TempDir()
	pods := filepath.Join(dir, "pods.yaml")
	if err := os.WriteFile(pods, []byte(chainPods), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`source "files" "pods" {
  paths         = [%q]
  poll_interval = "100ms"
}
source "static" "nets" {
  records = { "10.0.0.0/8" = {}, "192.168.0.0/16" = {}, "172.16.0.0/12" = {} }
}
sink "log" "files" {
  input = source.files.pods
  path  = %q
}
sink "log" "static" {
  input = source.static.nets
  path  = %q
}
`, pods, filepath.Join(dir, "files.log"), filepath.Join(dir, "static.log"))
	addr, stop := startRun(t, dir, cfg)
	defer stop()
	waitReady(t, http.DefaultClient, "http://"+addr+"/readyz")
	eventually(t, "pipeline_node_records of both sinks", func() bool {
		return metricValue(t, addr, "pipeline_node_records", "sink.log.files") == 2 && metricValue(t, addr, "pipeline_node_records", "sink.log.static") == 3
	})
	before := metricValue(t, addr, "pipeline_change_latency_seconds_count", "sink.log.files")
	if err := os.WriteFile(pods, []byte(strings.SplitN(chainPods, "---\n", 2)[0]), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a timed change and 1 record in sink.log.files", func() bool {
		return metricValue(t, addr, "pipeline_change_latency_seconds_count", "sink.log.files") > before &&
			metricValue(t, addr, "pipeline_node_records", "sink.log.files") == 1
	})
}
