package engine

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// TestFullReadKnowsHeldEntries checks that a full read of a target read
// through node.ActualScanner recognises every entry the loop holds with
// the same bytes (the held index), including entries held while the
// index held bytes of another length: once those are gone, the next read
// indexes them.
func TestFullReadKnowsHeldEntries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := nodetest.NewMemSink()
		sink.Encoded = true
		h := start(t, true, 0, sink)
		// The first entry held sets the index's length; the short keys
		// written after it do not fit.
		h.send(func(o node.Output) {
			o.Replace([]node.Record{{Key: "a-much-longer-key", Value: str("v")}})
			o.MarkSynced()
		})
		synctest.Wait()
		var ds []node.Delta
		for i := range 100 {
			ds = append(ds, node.Upsert(node.Key(fmt.Sprintf("k%03d", i)), str("v"), time.Time{}))
		}
		h.send(func(o node.Output) { o.Apply(ds) })
		synctest.Wait()
		h.send(func(o node.Output) { o.Apply([]node.Delta{{Key: "a-much-longer-key", Delete: true}}) })
		synctest.Wait()
		for round := range 3 {
			sink.ResetCounts()
			time.Sleep(61 * time.Second) // resync
			synctest.Wait()
			up, del, reads := sink.Counts()
			if reads != 1 || up != 0 || del != 0 {
				t.Fatalf("resync %d: %d reads, %d updates, %d deletes; want one read and no writes", round, reads, up, del)
			}
			if n := sink.Unknown(); n != 0 {
				t.Fatalf("resync %d: the read handed over %d entries the loop holds with the same bytes", round, n)
			}
		}
		sink.Set("k007", str("wrong"))
		sink.Remove("k008")
		sink.ResetCounts()
		time.Sleep(61 * time.Second)
		synctest.Wait()
		if up, _, _ := sink.Counts(); up != 2 || sink.Unknown() != 1 {
			t.Fatalf("after drift: %d updates, %d entries handed over; want 2 and 1 (k007)", up, sink.Unknown())
		}
		h.shutdown()
	})
}
