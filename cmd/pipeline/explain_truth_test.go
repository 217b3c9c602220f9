package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/google/go-cmp/cmp"

	"github.com/pipeline/pipeline/cmd/pipeline/admin"
	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/engine/sinkloop"
	"github.com/pipeline/pipeline/internal/redact"
)

// TestExplainEntryDeletedByHand: an entry deleted by hand from a real
// pinned map is, at once and without waiting for a full read, wanted and
// not in the target in explain (human and JSON, with the time of the
// read) and in the console's key panel data (GET /explain, which the page
// draws green only for "applied"); plan agrees that it must be created.
func TestExplainEntryDeletedByHand(t *testing.T) {
	if os.Geteuid() != 0 {
		missingInCI(t, "writing pinned maps needs root (bpffs)")
	}
	bpfDir, err := os.MkdirTemp("/sys/fs/bpf", "explain-")
	if err != nil {
		missingInCI(t, "no bpffs at /sys/fs/bpf: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(bpfDir) })
	pin := filepath.Join(bpfDir, "allowed")
	dir := t.TempDir()
	cfg := `source "static" "hosts" {
  records = {
    "10.1.0.3" = { n = 1 }
    "10.1.0.4" = { n = 2 }
  }
}
sink "ebpf_map" "allowed" {
  input       = source.static.hosts
  pin         = "` + pin + `"
  type        = "hash"
  max_entries = 64
  key {
    type = "ipv4"
  }
  value {
    type = "u32"
    from = record.value.n
  }
}
`
	addr, stop := startRun(t, dir, cfg)
	defer stop()
	if r := waitReady(t, http.DefaultClient, "http://"+addr+"/readyz"); !r.Ready {
		t.Fatalf("not ready: %+v", r)
	}
	if out, code := planCLI("explain", "--against", addr, "10.1.0.3"); code != 0 || !strings.Contains(out, "  applied\n") || !strings.Contains(out, "  actual   \"01000000\"  read at ") {
		t.Fatalf("explain before the delete: exit %d:\n%s", code, out)
	}

	m, err := ebpf.LoadPinnedMap(pin, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Delete([]byte(net.ParseIP("10.1.0.3").To4())); err != nil {
		t.Fatal(err)
	}
	before := time.Now()

	out, code := planCLI("explain", "--against", addr, "10.1.0.3")
	if code != 0 || !strings.Contains(out, "sink.ebpf_map.allowed  10.1.0.3  wanted, not in the target\n") ||
		!strings.Contains(out, "  want     \"01000000\"\n") || !strings.Contains(out, "  wrote    \"01000000\"\n") ||
		!strings.Contains(out, "  actual   (none)  read at ") || strings.Contains(out, "applied") {
		t.Errorf("explain after the delete: exit %d:\n%s", code, out)
	}
	t.Logf("explain after the delete:\n%s", out)

	// The console's key panel reads the same answer.
	resp, err := http.Get("http://" + addr + "/explain?key=10.1.0.3")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var v admin.Explanation
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if len(v.Entries) != 1 {
		t.Fatalf("explain JSON: %s", body)
	}
	e := v.Entries[0]
	if e.Status != "wanted, not in the target" || !e.Wanted || e.InTarget || e.Actual != nil || e.ActualReadAt == nil || e.ActualReadAt.Before(before.Add(-time.Second)) {
		t.Errorf("explain JSON after the delete: %s", body)
	}

	if out, code := planCLI("plan", filepath.Join(dir, "p.hcl")); code != 2 || !strings.Contains(out, "10.1.0.3") {
		t.Errorf("plan after the delete: exit %d, want 2 with a create of 10.1.0.3:\n%s", code, out)
	}
}

// TestExplainDetailOnce: a target's detail lines about a key (a rendered
// file's lines) are listed once in the answer.
func TestExplainDetailOnce(t *testing.T) {
	ex := engine.Explanation{Key: "a", Entries: []engine.SinkEntry{{Sink: "sink.template.cfg",
		Entry: sinkloop.Entry{InputKey: "a", TargetKey: "a", Status: "applied", Detail: []string{"line 3: server a 10.0.0.1:80"}}}}}
	v := admin.ViewExplanation(ex, redact.New(nil))
	if d := cmp.Diff([]string{"line 3: server a 10.0.0.1:80"}, v.Entries[0].Detail); d != "" {
		t.Errorf("detail (-want +got):\n%s", d)
	}
}
