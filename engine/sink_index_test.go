package engine

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/internal/heldindex"
)

// TestFullReadKnowsHeldEntries checks that a full read of a target read
// through node.ActualScanner recognises every entry the loop holds with
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

// TestHeldBookkeeping holds and drops entries at random, some of a length
// the index cannot take, some during a full pass, some what the key
// wants, while the wanted entries change, with reads (reindex) between,
// and checks the invariants of sink_held.go and sinkstate.go after each
// step: every held key is either indexed under its bytes or listed in
// pending, the counts agree, pending stays bounded without reads
// (holding a key compacts it), each key's held entry is the one last
// held, and the store keeps held entries only for the keys that hold
// something other than what they want, reusing freed slots.
func TestHeldBookkeeping(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	s := &sinkLoop{keys: newKeyStore(), heldIdx: heldindex.New()}
	oracle := map[node.Key][]byte{} // the Data each key holds
	check := func(step int) {
		t.Helper()
		for k, d := range oracle {
			ks := s.keys.get(k)
			if ks == nil || !ks.applied || !bytes.Equal(s.keys.heldOf(ks).Data, d) || (d == nil) != (s.keys.heldOf(ks).Data == nil) {
				t.Fatalf("step %d: %s holds %q, want %q", step, k, s.keys.heldOf(ks).Data, d)
			}
		}
		own := 0
		for ks := range s.keys.states {
			if ks.ownHeld != 0 {
				own++
				if !ks.applied {
					t.Fatalf("step %d: %s keeps a held entry of its own, holding nothing", step, ks.key)
				}
			}
		}
		if st := &s.keys; own != st.ownN || len(st.own) != st.ownN+len(st.ownFree) || (own == 0) != (st.own == nil) {
			t.Fatalf("step %d: %d keys keep a held entry of their own; the store counts %d in %d slots, %d free", step, own, st.ownN, len(st.own), len(st.ownFree))
		}
		held, unindexed, indexed := 0, 0, 0
		listed := map[uint32]bool{}
		for _, ref := range s.pending {
			listed[ref] = true
		}
		for ks := range s.keys.states {
			if !ks.applied {
				continue
			}
			held++
			if ks.indexed {
				indexed++
				if r, ok := s.heldIdx.Ref(s.keys.heldOf(ks).Data); !ok || r != ks.ref {
					t.Fatalf("step %d: %s indexed, but the index has %d, %v", step, ks.key, r, ok)
				}
				continue
			}
			unindexed++
			if !listed[ks.ref] {
				t.Fatalf("step %d: %s held, not indexed, not pending", step, ks.key)
			}
		}
		if held != s.held || unindexed != s.unindexed || indexed != s.heldIdx.Len() {
			t.Fatalf("step %d: held %d/%d, unindexed %d/%d, indexed %d/%d", step, held, s.held, unindexed, s.unindexed, indexed, s.heldIdx.Len())
		}
	}
	most := 0 // unindexed keys at most so far
	bounded := func(step int) {
		t.Helper()
		most = max(most, s.unindexed)
		if len(s.pending) > 2*most+1024 {
			t.Fatalf("step %d: %d pending, at most %d unindexed keys", step, len(s.pending), most)
		}
	}
	for step := range 30_000 {
		k := node.Key(fmt.Sprint("k", rng.IntN(300)))
		switch r := rng.IntN(100); {
		case r < 50:
			data := []byte(fmt.Sprintf("%-8s", k)) // 8 bytes for most keys
			if rng.IntN(5) == 0 {
				data = append(data, byte(rng.IntN(3))) // another length
			}
			if rng.IntN(50) == 0 {
				data = nil
			}
			ks := s.state(k)
			if ks.owners > 0 && rng.IntN(3) == 0 { // a write of what it wants
				data = ks.want.Data
				s.holdEntry(ks, ks.want, true)
			} else {
				s.holdEntry(ks, keptEntry{Data: data}, false)
			}
			oracle[k] = data
			bounded(step)
		case r < 70: // the key's wanted entry changes or goes
			ks := s.state(k)
			s.keys.keepHeld(ks)
			ks.owners, ks.want = 0, keptEntry{}
			if rng.IntN(3) > 0 {
				ks.owners, ks.want = 1, keptEntry{Data: []byte(fmt.Sprintf("%-8d", rng.IntN(4)))}
			}
			s.forget(ks)
		case r < 90:
			if ks := s.keys.get(k); ks != nil {
				s.dropEntry(ks)
				delete(oracle, k)
				s.forget(ks)
			}
		case r < 95:
			s.deferIndex = !s.deferIndex
		case step < 10_000: // the second half has no full read
			s.reindex()
		}
		check(step)
	}
}

// heldState asks the harness's sink loop how many keys wait to be
// indexed and how many are.
func heldState(h *harness) (pending, indexed int) {
	pending, indexed, _ = heldOrder(h)
	return pending, indexed
}

// ownHeld asks the harness's sink loop how many keys keep a held entry
// of their own, other than the one they want.
func ownHeld(h *harness) (n int) {
	askLoop(h, func(s *sinkLoop) { n = s.keys.ownN })
	return n
}

// heldOrder is heldState, and whether the index is laid out in the order
// of a read (heldindex.Index.Ordered).
func heldOrder(h *harness) (pending, indexed int, ordered bool) {
	askLoop(h, func(s *sinkLoop) {
		pending, indexed, ordered = len(s.pending), s.heldIdx.Len(), s.heldIdx.Ordered()
	})
	return pending, indexed, ordered
}

// askLoop runs q on the goroutine of the harness's sink loop.
func askLoop(h *harness, q func(*sinkLoop)) {
	h.rt.mu.RLock()
	var s *sinkLoop
	for _, sl := range h.rt.sinks {
		s = sl
	}
	h.rt.mu.RUnlock()
	done := make(chan struct{})
	s.ask <- func() {
		defer close(done)
		q(s)
	}
	<-done
}
