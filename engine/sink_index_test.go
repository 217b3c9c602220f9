package engine

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/engine/sinkloop"
)

// TestFullReadKnowsHeldEntries checks that a full read of a target read
// in chunks (node.Chunked) recognises every entry the loop holds with
// the same bytes (the held index): entries written by a full pass
// (indexed once the loop is idle), by incremental rounds, and entries
// held while the index held bytes of another length (indexed by the
// first read after those are gone).
func TestFullReadKnowsHeldEntries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := nodetest.NewMemSink()
		sink.Encoded = true
		h := start(t, true, 0, sink)
		resync := func(what string, ups, unknown int) {
			t.Helper()
			sink.ResetCounts()
			time.Sleep(61 * time.Second)
			synctest.Wait()
			up, del, reads := sink.Counts()
			if reads != 1 || up != ups || del != 0 || sink.Unknown() != unknown {
				t.Fatalf("%s: %d reads, %d updates, %d deletes, %d entries handed over; want 1, %d, 0, %d",
					what, reads, up, del, sink.Unknown(), ups, unknown)
			}
		}
		// The first entry indexed sets the index's length; the short keys
		// written after it do not fit.
		h.send(func(o node.Output) {
			o.Replace([]node.Record{{Key: "a-much-longer-key", Value: str("v")}})
			o.MarkSynced()
		})
		synctest.Wait()
		if pending, indexed := heldState(h); pending != 0 || indexed != 1 {
			t.Fatalf("idle after the first full pass: %d keys pending, %d indexed; want 0 and 1", pending, indexed)
		}
		resync("first resync", 0, 0)
		var ds []node.Delta
		for i := range 100 {
			ds = append(ds, node.Upsert(node.Key(fmt.Sprintf("k%03d", i)), str("v"), time.Time{}))
		}
		h.send(func(o node.Output) { o.Apply(ds) })
		synctest.Wait()
		h.send(func(o node.Output) { o.Apply([]node.Delta{{Key: "a-much-longer-key", Delete: true}}) })
		synctest.Wait()
		for round := range 3 {
			resync(fmt.Sprint("resync ", round), 0, 0)
		}
		// The index was laid out by hash; the reads return the entries in
		// another order, which the loop, idle, lays the index out in.
		if _, _, ordered := heldOrder(h); !ordered {
			t.Fatal("idle after full reads, the loop has not laid its index out in the order of a read")
		}
		sink.Set("k007", str("wrong"))
		sink.Remove("k008")
		resync("after drift", 2, 1) // k007 handed over, k008 missing
		resync("after the repair", 0, 0)
		h.shutdown()
	})
}

// heldState asks the harness's sink loop how many keys wait to be
// indexed and how many are.
func heldState(h *harness) (pending, indexed int) {
	b := bookkeeping(h)
	return b.Pending, b.Indexed
}

// ownHeld asks the harness's sink loop how many keys keep a held entry
// of their own, other than the one they want.
func ownHeld(h *harness) int { return bookkeeping(h).OwnHeld }

// heldOrder is heldState, and whether the index is laid out in the order
// of a read (heldindex.Index.Ordered).
func heldOrder(h *harness) (pending, indexed int, ordered bool) {
	b := bookkeeping(h)
	return b.Pending, b.Indexed, b.Ordered
}

// bookkeeping asks the harness's sink loop for its Bookkeeping.
func bookkeeping(h *harness) sinkloop.Bookkeeping {
	h.rt.mu.RLock()
	var s *sink
	for _, sl := range h.rt.sinks {
		s = sl
	}
	h.rt.mu.RUnlock()
	b, _ := s.Bookkeeping(context.Background())
	return b
}
