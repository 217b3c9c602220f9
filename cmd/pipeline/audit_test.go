package main

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"go.uber.org/goleak"
)

const staticToAuditAndLog = `
source "static" "nets" {
  records = { "10.0.0.0/8" = { network = "internal" } }
}
sink "audit" "trail" {
  input          = source.static.nets
  path           = "blocker/trail.jsonl"
  fail           = "%s"
  fsync_interval = "20ms"
}
sink "log" "out" {
  input = source.static.nets
  path  = "out.log"
}
`

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// blockedDir is a directory where the audit path "blocker/trail.jsonl" cannot
// be created (blocker is a regular file) until the file is removed.
func blockedDir(t *testing.T) (dir, blocker string) {
	dir = t.TempDir()
	blocker = filepath.Join(dir, "blocker")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, blocker
}

var ignoreHTTP = []goleak.Option{goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"), goleak.IgnoreTopFunction("internal/poll.runtime_pollWait")}

// TestAuditFailClosedMakesSinksWait: while the trail cannot be written, the
// log sink waits with its writes (and says so in /readyz); once the trail opens,
// both catch up and the trail verifies.
func TestAuditFailClosedMakesSinksWait(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreHTTP...)
	dir, blocker := blockedDir(t)
	addr, stop := startRun(t, dir, strings.Replace(staticToAuditAndLog, "%s", "closed", 1))
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	eventually(t, "the log sink to report it holds its writes", func() bool {
		return strings.Contains(get(t, client, "http://"+addr+"/readyz"), "writes wait until sink.audit.trail")
	})
	if n := fileSize(filepath.Join(dir, "out.log")); n != 0 {
		t.Fatalf("the log sink wrote %d bytes while the audit trail was failing", n)
	}
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the log sink to write once the trail opened", func() bool { return fileSize(filepath.Join(dir, "out.log")) > 0 })
	eventually(t, "the head seq in /metrics", func() bool {
		return strings.Contains(get(t, client, "http://"+addr+"/metrics"), `pipeline_sink_audit_head_seq{node="sink.audit.trail"}`)
	})
	problems, err := promlint.New(strings.NewReader(get(t, client, "http://"+addr+"/metrics"))).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "pipeline_sink_audit") {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}
	stop()
	trail := filepath.Join(dir, "blocker", "trail.jsonl")
	b, _ := os.ReadFile(trail)
	for _, want := range []string{`"op":"config_loaded"`, `"op":"upsert"`, `"key":"10.0.0.0/8"`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("trail lacks %s:\n%s", want, b)
		}
	}
	var out bytes.Buffer
	if code := run([]string{"audit", "verify", trail}, &out, &out); code != 0 || !strings.Contains(out.String(), "trail intact") {
		t.Fatalf("verify: exit %d\n%s", code, out.String())
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	os.WriteFile(trail, bytes.Join(append(lines[:1:1], lines[2:]...), nil), 0o600)
	out.Reset()
	if code := run([]string{"audit", "verify", trail}, &out, &out); code != 1 || !strings.Contains(out.String(), trail+":2: removed") {
		t.Fatalf("verify of a trail missing line 2: exit %d\n%s", code, out.String())
	}
}

// TestAuditFailOpenKeepsDataPath: the trail cannot be written, the audit
// sink is degraded, and the log sink writes regardless.
func TestAuditFailOpenKeepsDataPath(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreHTTP...)
	dir, _ := blockedDir(t)
	addr, stop := startRun(t, dir, strings.Replace(staticToAuditAndLog, "%s", "open", 1))
	defer stop()
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	eventually(t, "the log sink to write", func() bool { return fileSize(filepath.Join(dir, "out.log")) > 0 })
	eventually(t, "the audit sink to show degraded", func() bool {
		body := get(t, client, "http://"+addr+"/readyz")
		return strings.Contains(body, `"address":"sink.audit.trail","state":"degraded"`)
	})
	if !strings.Contains(get(t, client, "http://"+addr+"/metrics"), `pipeline_sink_audit_write_failures_total{node="sink.audit.trail"}`) {
		t.Error("failures are not counted in /metrics")
	}
}
