package audit

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/pipeline/pipeline/engine/node"
)

// blocked builds a sink whose path lies under a regular file, which no
// user (root included) can create; removing the file unblocks it.
func blocked(t *testing.T, fail string) (*Sink, string) {
	t.Helper()
	dir := t.TempDir()
	blocker := filepath.Join(dir, "blocker")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return build(t, blocker, `fail = "`+fail+`"`+"\nfsync_interval = \"10ms\""), blocker
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestFailOpen(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	s, blocker := blocked(t, "open")
	tg, h, _ := open(t, s)
	if h.State() != node.Degraded {
		t.Fatalf("health %v after failing to open, want degraded", h.State())
	}
	if s.Wait() != nil {
		t.Fatal("fail = open holds the graph")
	}
	batch := []node.Entry{rec(1), rec(2)}
	tg.Update(context.Background(), batch) // kept until the trail takes them
	if n := testutil.ToFloat64(tg.met.failures); n != 2 {
		t.Errorf("failures counted: %v, want 2", n)
	}
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the ticker to open the trail", func() bool { return h.State() == node.Healthy })
	tg.Update(context.Background(), []node.Entry{rec(3)})
	if err := tg.Close(); err != nil {
		t.Fatal(err)
	}
	var keys []any
	for _, l := range readLines(t, filepath.Join(blocker, "trail.jsonl")) {
		keys = append(keys, l["key"])
	}
	if d := cmp.Diff([]any{nil, "10.0.0.1/32", "10.0.0.2/32", "10.0.0.3/32"}, keys); d != "" {
		t.Errorf("keys of the trail's lines (-want +got):\n%s", d)
	}
	mustVerify(t, blocker)
}

func TestFailClosedGate(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	s, blocker := blocked(t, "closed")
	if s.Wait() == nil {
		t.Fatal("fail = closed lets writes go before the trail opened")
	}
	tg, _, _ := open(t, s)
	if s.Wait() == nil {
		t.Fatal("fail = closed lets writes go while the trail cannot be opened")
	}
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := node.WaitGate(ctx, s); err != nil {
		t.Fatalf("gate never opened: %v", err)
	}
	// A later failure shuts it again: the trail's directory becomes a file.
	tg.mu.Lock()
	tg.tr.close()
	tg.mu.Unlock()
	os.RemoveAll(blocker)
	os.WriteFile(blocker, nil, 0o600)
	tg.Update(context.Background(), []node.Entry{rec(1)})
	if s.Wait() == nil {
		t.Fatal("a failed write left the gate open")
	}
	os.Remove(blocker)
	if err := node.WaitGate(ctx, s); err != nil {
		t.Fatalf("gate never opened again: %v", err)
	}
	if err := tg.Close(); err != nil {
		t.Fatal(err)
	}
	if lines := readLines(t, filepath.Join(blocker, "trail.jsonl")); lines[len(lines)-1]["key"] != "10.0.0.1/32" {
		t.Errorf("the owed line was not written before the gate opened: %v", lines)
	}
}
