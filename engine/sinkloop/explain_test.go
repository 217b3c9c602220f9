package sinkloop

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// TestExplainReadsTheTarget: explain compares what the input wants with
// what the target holds at the key now, not with what the loop last
// wrote. An entry removed or changed behind the loop's back, before any
// full read finds it, is wanted and not in the target, or wanted with
// another value there, with the time of the read; a refused entry is
// never applied; an append-only target's accepted entry is appended.
func TestExplainReadsTheTarget(t *testing.T) {
	for _, encoded := range []bool{false, true} {
		t.Run(fmt.Sprint("encoded=", encoded), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sink := nodetest.NewMemSink()
				sink.Encoded = encoded
				sink.FailKey = func(k node.Key) bool { return k == "refused" }
				l, in := runLoop(t, sink)
				in.send(node.Event{Reset: true, Synced: true, Snapshot: []node.Record{
					{Key: "ok", Value: str("1")}, {Key: "lost", Value: str("2")}, {Key: "changed", Value: str("3")}, {Key: "refused", Value: str("4")}}})
				synctest.Wait()
				explain := func(k node.Key) Entry {
					t.Helper()
					e, found, answered := l.Explain(context.Background(), k)
					if !found || !answered {
						t.Fatalf("explain %s: found %v, answered %v", k, found, answered)
					}
					return e
				}
				if e := explain("ok"); e.Status != "applied" || !e.InTarget || !e.Written || e.ActualAt.IsZero() {
					t.Fatalf("explain ok: %+v", e)
				}
				sink.Remove("lost")
				sink.Set("changed", str("x"))
				before := time.Now()
				for k, want := range map[node.Key]string{"lost": "wanted, not in the target", "changed": "wanted, the target holds another value", "refused": "wanted, not in the target"} {
					e := explain(k)
					if e.Status != want || e.ActualAt.Before(before) {
						t.Errorf("explain %s: status %q read at %v; want %q, read now", k, e.Status, e.ActualAt, want)
					}
				}
				if e := explain("changed"); !e.InTarget || e.Actual.AsString() != "x" || !e.Written || e.Wrote.AsString() != "3" {
					t.Errorf("explain changed: actual %#v (in target %v), wrote %#v; want x, and 3 written", e.Actual, e.InTarget, e.Wrote)
				}
				if e := explain("refused"); e.Written || e.Attempts == 0 || e.LastError == "" {
					t.Errorf("explain refused: written %v, %d attempts, error %q", e.Written, e.Attempts, e.LastError)
				}
			})
		})
	}
}

// TestExplainAppendOnly: an append-only target cannot be read; an entry
// it accepted is "appended", with no read time.
func TestExplainAppendOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := nodetest.NewMemSink()
		sink.AppendOnly = true
		l, in := runLoop(t, sink)
		in.send(node.Event{Reset: true, Synced: true, Snapshot: []node.Record{{Key: "a", Value: str("1")}}})
		synctest.Wait()
		e, found, _ := l.Explain(context.Background(), "a")
		if !found || e.Status != "appended" || !e.ActualAt.IsZero() || e.ReadError != "" {
			t.Fatalf("explain a: %+v", e)
		}
	})
}
