package main

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipeline/pipeline/engine"
)

// TestTemplateRefusedAtSync: a render the real HAProxy refuses (haproxy
// -c) in the round in which the input syncs is that round's failure: the
// round's log line counts every entry of the render as failed, explain
// says each is wanted and not in the target and shows the refusal once,
// and /readyz says the sink is degraded.
func TestTemplateRefusedAtSync(t *testing.T) {
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		missingInCI(t, "no haproxy: %v (apt-get install haproxy)", err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "haproxy.cfg")
	r := launch(t, dir, `source "static" "servers" {
  records = {
    "web-1" = { addr = "127.0.0.1:8081" }
    "web-2" = { addr = "bad..address:80x" }
  }
}
sink "template" "proxy" {
  input         = source.static.servers
  path          = "`+cfg+`"
  check_command = ["`+haproxy+`", "-c", "-f", "{{path}}"]
  template      = <<-EOT
    defaults
      mode http
      timeout connect 1s
      timeout client 1s
      timeout server 1s
    backend be
    %{ for r in records ~}
      server ${r.key} ${r.value.addr}
    %{ endfor ~}
  EOT
}
`)
	defer func() {
		if err := r.stop(); err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	var round map[string]any
	deadline := time.Now().Add(20 * time.Second)
	for round == nil && time.Now().Before(deadline) {
		for _, line := range strings.Split(r.stderr.String(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "full reconcile" && m["node"] == "sink.template.proxy" {
				round = m
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if round == nil {
		t.Fatalf("no full reconcile logged:\n%s", r.stderr.String())
	}
	if round["upserts"] != 0.0 || round["failed"] != 2.0 {
		t.Errorf("the sync round logged upserts=%v failed=%v, want 0 and 2", round["upserts"], round["failed"])
	}
	for _, key := range []string{"web-1", "web-2"} {
		out, code := planCLI("explain", "--against", r.addr, key)
		if code != 0 || !strings.Contains(out, "sink.template.proxy  "+key+"  wanted, not in the target\n") {
			t.Errorf("explain %s: exit %d:\n%s", key, code, out)
		}
		if n := strings.Count(out, "check_command refused"); n != 1 {
			t.Errorf("explain %s shows the refusal %d times, want once:\n%s", key, n, out)
		}
		if !strings.Contains(out, "(rendered, not in the file)") {
			t.Errorf("explain %s does not say its lines are not in the file:\n%s", key, out)
		}
	}
	resp, err := http.Get("http://" + r.addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rd engine.Readiness
	if err := json.NewDecoder(resp.Body).Decode(&rd); err != nil {
		t.Fatal(err)
	}
	for _, n := range rd.Nodes {
		if n.Address == "sink.template.proxy" && n.State != "degraded" {
			t.Errorf("/readyz: the sink is %s (%s), want degraded", n.State, n.Detail)
		}
	}
}
