package sinkloop

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// TestRejectedNotRetried: a write the target rejects for good
// (node.Rejected) is recorded failed and rejected, shown so by explain
// and /readyz, and not written again on a backoff: only when the input
// wants another value, or at the next resync. An upsert of the same
// value writes nothing; a rejected delete waits the same way.
func TestRejectedNotRetried(t *testing.T) {
	for _, encoded := range []bool{false, true} {
		t.Run(fmt.Sprint("encoded=", encoded), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sink := nodetest.NewMemSink()
				sink.Encoded = encoded
				var rejecting atomic.Bool
				rejecting.Store(true)
				var tries sync.Map // key -> *atomic.Int32: writes of the key the target saw
				sink.RejectKey = func(k node.Key) bool {
					n, _ := tries.LoadOrStore(k, new(atomic.Int32))
					n.(*atomic.Int32).Add(1)
					return rejecting.Load() && (k == "bad" || k == "gone")
				}
				attempts := func(k node.Key) int {
					n, ok := tries.Load(k)
					if !ok {
						return 0
					}
					return int(n.(*atomic.Int32).Load())
				}
				var mu sync.Mutex
				var state node.State
				var detail string
				l := New(nopConfig(Config{Address: "sink.mem.m", Prune: true, Resync: time.Minute,
					Health: func(st node.State, d string) { mu.Lock(); state, detail = st, d; mu.Unlock() }}))
				target, err := sink.Open(context.Background(), node.Env{}, node.ModeRun)
				if err != nil {
					t.Fatal(err)
				}
				in := &feed{ready: make(chan struct{}, 1)}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { _ = l.Run(ctx, target, in); close(done) }()
				defer func() { cancel(); <-done }()

				sink.Set("gone", str("old"))
				in.send(node.Event{Reset: true, Synced: true, Snapshot: []node.Record{{Key: "ok", Value: str("1")}, {Key: "bad", Value: str("1")}}})
				synctest.Wait()
				if attempts("bad") != 1 || attempts("gone") != 1 {
					t.Fatalf("first pass: bad written %d times, gone deleted %d times; want 1 each", attempts("bad"), attempts("gone"))
				}
				mu.Lock()
				st, d := state, detail
				mu.Unlock()
				if st != node.Degraded || !strings.Contains(d, "2 entries rejected by the target") || !strings.Contains(d, "injected rejection") {
					t.Errorf("health %v %q; want degraded, 2 entries rejected", st, d)
				}
				e, found, _ := l.Explain(context.Background(), "bad")
				if !found || e.Rejected == "" || !e.RetryAt.IsZero() || !strings.Contains(e.LastError, "injected rejection") || e.Status != "wanted, not in the target" {
					t.Errorf("explain bad: status %q, rejected %q, retry at %v, error %q", e.Status, e.Rejected, e.RetryAt, e.LastError)
				}

				time.Sleep(50 * time.Second) // a backoff would have retried several times by now
				synctest.Wait()
				in.send(node.Event{Deltas: []node.Delta{node.Upsert("bad", str("1"), time.Now())}, Synced: true})
				synctest.Wait()
				if attempts("bad") != 1 || attempts("gone") != 1 {
					t.Fatalf("before the resync: bad written %d times, gone deleted %d times; want 1 each", attempts("bad"), attempts("gone"))
				}

				in.send(node.Event{Deltas: []node.Delta{node.Upsert("bad", str("2"), time.Now())}, Synced: true})
				synctest.Wait()
				if attempts("bad") != 2 || attempts("gone") != 1 {
					t.Fatalf("after a new value: bad written %d times, gone deleted %d times; want 2 and 1", attempts("bad"), attempts("gone"))
				}

				time.Sleep(11 * time.Second) // the resync writes both again
				synctest.Wait()
				if attempts("bad") != 3 || attempts("gone") != 2 {
					t.Fatalf("after the resync: bad written %d times, gone deleted %d times; want 3 and 2", attempts("bad"), attempts("gone"))
				}

				rejecting.Store(false)
				time.Sleep(time.Minute)
				synctest.Wait()
				if !sink.Has("bad", func(v cty.Value) bool { return v.AsString() == "2" }) || sink.Has("gone", func(cty.Value) bool { return true }) {
					t.Fatalf("after the rejections ended and a resync: %v", sink.State())
				}
				mu.Lock()
				st = state
				mu.Unlock()
				if st != node.Healthy {
					t.Errorf("health %v once nothing is rejected; want healthy", st)
				}
				if e, _, _ := l.Explain(context.Background(), "bad"); e.Rejected != "" || e.Status != "applied" {
					t.Errorf("explain bad: status %q, rejected %q", e.Status, e.Rejected)
				}
			})
		})
	}
}
