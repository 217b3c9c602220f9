package sinkloop

import (
	"bytes"
	"slices"
	"time"
)

// What the loop believes the target holds lives in each key's state (its
// held entry and hold). For a target read in chunks (node.Chunked) the loop also
// keeps heldIdx, the held entries by their bytes, so that a full read
// finds an entry it holds with one probe (a mark in the index) instead of
// a lookup by key and three pointer chases. Every held key is either in
// heldIdx (indexed) or listed in pending: held during a full pass, or not
// indexable (no Data, or Data of another length than the index's). The
// keys a full pass held go into the index in one batch once the loop has
// nothing left to write (or, if it never idles, at the start of the next
// full read), sorted by slot, so that neither the pass (whose writes are
// what a start-up waits for) nor the next read pays for random probes.
// The same idle moment after a full read lays the index out in the order
// the read returned the entries (heldindex.Index.Settle), so that the
// next read, if the target returns them in the same order, matches them
// in order. docs/data-path.md §5 gives the measurements.

// holdEntry records that the target holds e at ks's key: ks.want, which
// the loop wrote (ev onWrite), or what a full read found (onRead). An
// entry read from the target with the bytes of ks.want counts as it, so
// that the state keeps no copy of it.
func (s *state) holdEntry(ks *keyState, e keptEntry, ev event) {
	wanted := ev == onWrite || (ks.owners > 0 && e.Data != nil && bytes.Equal(e.Data, ks.want.Data))
	if (ks.indexed() && bytes.Equal(s.keys.heldOf(ks).Data, e.Data)) || (ks.held() && !ks.indexed()) {
		// The same bytes, whose index entry stands, mark and all; or
		// unindexed already (and listed in pending, when there is an index).
		s.keys.setHeld(ks, e, wanted)
		ks.step(ev)
		return
	}
	if ks.written() {
		ev = onWrite // a read of other bytes at a key this run wrote: still its
	}
	s.dropEntry(ks)
	s.keys.setHeld(ks, e, wanted)
	s.holdNew(ks, e.Data, ev)
}

// holdNew counts ks's key, which held nothing, as held with bytes data
// (its held entry recorded already) after ev: in heldIdx, or listed in
// pending.
func (s *state) holdNew(ks *keyState, data []byte, ev event) {
	s.held++
	ks.step(ev)
	if s.heldIdx != nil && !s.deferIndex && data != nil && s.heldIdx.Put(data, ks.ref) {
		ks.step(onIndex)
		return
	}
	s.unindexed++
	if s.heldIdx != nil {
		s.pending = append(s.pending, ks.ref)
		if len(s.pending) > 2*s.unindexed+pendingSlack {
			s.compactPending()
		}
	}
}

// dropEntry records that the target no longer holds ks's key.
func (s *state) dropEntry(ks *keyState) {
	if !ks.held() {
		return
	}
	s.held--
	s.unbrake(ks)
	if ks.indexed() {
		s.heldIdx.Delete(s.keys.heldOf(ks).Data)
	} else {
		s.unindexed-- // its pending reference is dropped when next looked at
	}
	s.keys.clearHeld(ks)
	ks.step(onDrop)
}

// unindexedAt returns the state pending reference ref names if it is
// still held and not indexed, else nil (the key was dropped since, or its
// slot went to another key: pending may list a slot twice).
func (s *state) unindexedAt(ref uint32) *keyState {
	ks := s.keys.at(ref)
	if ks == nil || !ks.held() || ks.indexed() {
		return nil
	}
	return ks
}

// pendingSlack is how far pending may outgrow twice the unindexed keys
// before compactPending runs: it keeps a loop that holds few unindexed
// keys from compacting on every append.
const pendingSlack = 1024

// compactPending drops the references of keys no longer unindexed, and
// duplicates: a loop that holds and drops unindexable keys for long
// without a full read keeps pending at most twice their number.
func (s *state) compactPending() {
	s.pending = slices.DeleteFunc(s.pending, func(ref uint32) bool { return s.unindexedAt(ref) == nil })
	slices.Sort(s.pending)
	s.pending = slices.Compact(s.pending)
}

// reindex puts the pending keys in heldIdx in one batch, pending keeping
// the keys it cannot take, and settles the index after a full read
// (heldindex.Index.Settle), so that the next read, if the target returns
// its entries in the same order, finds them in order.
func (s *state) reindex() {
	if len(s.pending) > 0 {
		s.indexPending()
	}
	if s.settle {
		s.heldIdx.Settle()
		s.settle = false
	}
}

// indexPending puts the pending keys in heldIdx in one batch; pending
// keeps the keys it cannot take.
func (s *state) indexPending() {
	data, refs := make([][]byte, 0, len(s.pending)), make([]uint32, 0, len(s.pending))
	var keep []uint32
	for _, ref := range s.pending {
		ks := s.unindexedAt(ref)
		switch {
		case ks == nil:
		case s.keys.heldOf(ks).Data == nil:
			keep = append(keep, ref)
		default:
			ks.step(onIndex) // taken: a slot listed twice is taken once
			data, refs = append(data, s.keys.heldOf(ks).Data), append(refs, ref)
		}
	}
	ok := make([]bool, len(refs))
	s.heldIdx.PutMany(data, refs, ok)
	for i, ref := range refs {
		if ok[i] {
			s.unindexed--
		} else {
			s.keys.at(ref).step(onUnindex)
			keep = append(keep, ref)
		}
	}
	s.pending = keep
}

// dropUnseen forgets every key held before the read numbered gen that
// the read did not see, and returns how many: the indexed keys it did
// not mark, found in the index's slot order without touching the others'
// states, and the unindexed keys not in seen.
func (s *state) dropUnseen(gen uint32, seen slots) int {
	n := 0
	lose := func(ks *keyState) {
		n++
		s.dropEntry(ks)
		if s.walked && ks.owners > 0 {
			s.touch(ks, time.Time{}) // wanted and gone: for fullPass
		}
		s.forget(ks)
	}
	if s.heldIdx == nil {
		for ks := range s.keys.states {
			if ks.held() && !seen.has(ks.ref) {
				lose(ks)
			}
		}
		return n
	}
	for _, ref := range s.heldIdx.AppendUnmarked(nil, gen) {
		if ks := s.keys.at(ref); ks != nil && ks.indexed() {
			lose(ks)
		}
	}
	if s.unindexed > 0 {
		for _, ref := range s.pending {
			if ks := s.unindexedAt(ref); ks != nil && !seen.has(ks.ref) {
				lose(ks)
			}
		}
	}
	return n
}
