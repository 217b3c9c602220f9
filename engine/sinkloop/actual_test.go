package sinkloop

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pipeline/pipeline/engine/node"
)

// TestActualBookkeeping sets and drops actual entries at random, some of
// a length the byte index cannot take, some during a full pass, some
// what the key wants, while the wanted entries change, with reads (tidy)
// between, and checks the invariants of actual.go after each step: every
// key in the target is either indexed under its bytes or listed in
// pending, the counts agree, pending stays bounded without reads
// (setting a key compacts it), each key's actual entry is the one last
// set, and one read with the bytes the key wants shares their memory.
func TestActualBookkeeping(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	s := &state{Loop: New(nopConfig(Config{})), keys: newKeyStore()}
	s.actual = newActual(&s.keys, true)
	x := s.actual.idx
	oracle := map[node.Key][]byte{} // the Data the target holds at each key
	check := func(step int) {
		t.Helper()
		for k, d := range oracle {
			ks := s.keys.get(k)
			if ks == nil || !ks.inTarget() || !bytes.Equal(ks.actual.Data, d) || (d == nil) != (ks.actual.Data == nil) {
				t.Fatalf("step %d: %s holds %q, want %q", step, k, ks.actual.Data, d)
			}
		}
		in, unindexed, indexed := 0, 0, 0
		listed := map[uint32]bool{}
		for _, ref := range x.pending {
			listed[ref] = true
		}
		for ks := range s.keys.states {
			if !ks.inTarget() {
				if ks.actual.Data != nil {
					t.Fatalf("step %d: %s not in the target keeps an actual entry", step, ks.key)
				}
				continue
			}
			in++
			if ks.indexed() {
				indexed++
				if r, ok := x.x.Ref(ks.actual.Data); !ok || r != ks.ref {
					t.Fatalf("step %d: %s indexed, but the index has %d, %v", step, ks.key, r, ok)
				}
				continue
			}
			unindexed++
			if !listed[ks.ref] {
				t.Fatalf("step %d: %s in the target, not indexed, not pending", step, ks.key)
			}
		}
		if in != s.actual.n || unindexed != x.unindexed || indexed != x.x.Len() {
			t.Fatalf("step %d: in the target %d/%d, unindexed %d/%d, indexed %d/%d", step, in, s.actual.n, unindexed, x.unindexed, indexed, x.x.Len())
		}
	}
	most := 0 // unindexed keys at most so far
	bounded := func(step int) {
		t.Helper()
		most = max(most, x.unindexed)
		if len(x.pending) > 2*most+1024 {
			t.Fatalf("step %d: %d pending, at most %d unindexed keys", step, len(x.pending), most)
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
			switch {
			case ks.owners > 0 && rng.IntN(3) == 0: // a write of what it wants
				data = ks.want.Data
				s.actual.set(ks, ks.want, onWrite)
			case ks.owners > 0 && ks.want.Data != nil && rng.IntN(3) == 0: // a read of what it wants
				data = bytes.Clone(ks.want.Data)
				s.actual.set(ks, keptEntry{Data: data}, onRead)
				if !ks.actual.shares(ks.want) {
					t.Fatalf("step %d: %s read what it wants and keeps a copy", step, k)
				}
			default:
				s.actual.set(ks, keptEntry{Data: data}, onRead)
			}
			oracle[k] = data
			bounded(step)
		case r < 70: // the key's wanted entry changes or goes
			ks := s.stateOf(k)
			ks.owners, ks.want = 0, keptEntry{}
			if rng.IntN(3) > 0 {
				ks.owners, ks.want = 1, keptEntry{Data: []byte(fmt.Sprintf("%-8d", rng.IntN(4)))}
			}
			s.forget(ks)
		case r < 90:
			if ks := s.keys.get(k); ks != nil {
				s.actual.drop(ks)
				delete(oracle, k)
				s.forget(ks)
			}
		case r < 95:
			x.batching = !x.batching
		case step < 10_000: // the second half has no full read
			s.actual.tidy()
		}
		check(step)
	}
}
