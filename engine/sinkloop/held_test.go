package sinkloop

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/sinkloop/heldindex"
)

// TestHeldBookkeeping holds and drops entries at random, some of a length
// the index cannot take, some during a full pass, some what the key
// wants, while the wanted entries change, with reads (reindex) between,
// and checks the invariants of held.go and keys.go after each
// step: every held key is either indexed under its bytes or listed in
// pending, the counts agree, pending stays bounded without reads
// (holding a key compacts it), each key's held entry is the one last
// held, and the store keeps held entries only for the keys that hold
// something other than what they want, reusing freed slots.
func TestHeldBookkeeping(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	s := &state{Loop: New(nopConfig(Config{})), keys: newKeyStore(), heldIdx: heldindex.New()}
	oracle := map[node.Key][]byte{} // the Data each key holds
	check := func(step int) {
		t.Helper()
		for k, d := range oracle {
			ks := s.keys.get(k)
			if ks == nil || !ks.held() || !bytes.Equal(s.keys.heldOf(ks).Data, d) || (d == nil) != (s.keys.heldOf(ks).Data == nil) {
				t.Fatalf("step %d: %s holds %q, want %q", step, k, s.keys.heldOf(ks).Data, d)
			}
		}
		own := 0
		for ks := range s.keys.states {
			if ks.ownHeld != 0 {
				own++
				if !ks.held() {
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
			if !ks.held() {
				continue
			}
			held++
			if ks.indexed() {
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
			ks := s.stateOf(k)
			if ks.owners > 0 && rng.IntN(3) == 0 { // a write of what it wants
				data = ks.want.Data
				s.holdEntry(ks, ks.want, onWrite)
			} else {
				s.holdEntry(ks, keptEntry{Data: data}, onRead)
			}
			oracle[k] = data
			bounded(step)
		case r < 70: // the key's wanted entry changes or goes
			ks := s.stateOf(k)
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
