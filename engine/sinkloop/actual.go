package sinkloop

import (
	"bytes"
	"context"
	"slices"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/sinkloop/byteindex"
)

// actual is what the target held when last read, as the loop's own writes
// changed it since. Each key's entry is in its state (keyState.actual,
// keyState.at); actual counts them and, for a target read and written in
// fixed-width chunks (node.Chunked), keeps them in a byte index too
// (byteIndex), so that a full read finds an entry it knows with one probe
// of the index instead of a lookup by key. Whether the target holds what
// the input wants is always an explicit comparison of the two entries
// (keyState.same).
type actual struct {
	keys *keyStore
	n    int        // keys the target holds
	idx  *byteIndex // nil unless the target is read in chunks
}

// byteIndex is the actual entries by their bytes. Every key the target
// holds is either in x (indexed) or listed in pending: set during a
// full pass, or not indexable (no Data, or Data of another length than
// the index's). The keys a full pass sets go into the index in one batch
// once the loop has nothing left to write (tidy; or, if it never idles,
// at the start of the next full read), sorted by slot, so that neither
// the pass (whose writes are what a start-up waits for) nor the next
// read pays for random probes. The same idle moment after a full read
// lays the index out in the order the read returned the entries
// (byteindex.Index.Settle), so that the next read, if the target returns
// them in the same order, matches them in order (docs/data-path.md §5).
type byteIndex struct {
	x         *byteindex.Index
	unindexed int      // keys in the target and not in x
	pending   []uint32 // their slots, and slots since dropped or indexed
	batching  bool     // a full pass runs: its keys go into x afterwards
	unsettled bool     // a full read marked x: Settle it when idle
}

// newActual is an empty actual over keys, with a byte index if indexed.
func newActual(keys *keyStore, indexed bool) actual {
	a := actual{keys: keys}
	if indexed {
		a.idx = &byteIndex{x: byteindex.New()}
	}
	return a
}

// set records that the target holds e at ks's key: ks.want, which the
// loop wrote (ev onWrite), or what a full read found (onRead). An entry
// read with the bytes of ks.want is kept as ks.want, sharing its memory.
func (a *actual) set(ks *keyState, e keptEntry, ev event) {
	if ev == onRead && ks.owners > 0 && e.Data != nil && bytes.Equal(e.Data, ks.want.Data) {
		e = ks.want
	}
	if (ks.indexed() && bytes.Equal(ks.actual.Data, e.Data)) || (ks.inTarget() && !ks.indexed()) {
		// The same bytes, whose index entry stands, mark and all; or
		// unindexed already (and listed in pending, when there is an index).
		ks.actual = e
		ks.step(ev)
		return
	}
	if ks.written() {
		ev = onWrite // a read of other bytes at a key this run wrote: still its
	}
	a.drop(ks)
	ks.actual = e
	a.n++
	ks.step(ev)
	a.index(ks)
}

// index puts ks's actual entry in the byte index, or lists it in pending.
func (a *actual) index(ks *keyState) {
	x := a.idx
	if x == nil {
		return
	}
	if !x.batching && ks.actual.Data != nil && x.x.Put(ks.actual.Data, ks.ref) {
		ks.step(onIndex)
		return
	}
	x.unindexed++
	x.pending = append(x.pending, ks.ref)
	if len(x.pending) > 2*x.unindexed+pendingSlack {
		a.compactPending()
	}
}

// drop records that the target no longer holds ks's key.
func (a *actual) drop(ks *keyState) {
	if !ks.inTarget() {
		return
	}
	a.n--
	switch {
	case ks.indexed():
		a.idx.x.Delete(ks.actual.Data)
	case a.idx != nil:
		a.idx.unindexed-- // its pending reference is dropped when next looked at
	}
	ks.actual = keptEntry{}
	ks.step(onDrop)
}

// unindexedAt returns the state pending reference ref names if the
// target still holds its key and it is not indexed, else nil (the key
// was dropped since, or its slot went to another key: pending may list a
// slot twice).
func (a *actual) unindexedAt(ref uint32) *keyState {
	ks := a.keys.at(ref)
	if ks == nil || !ks.inTarget() || ks.indexed() {
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
func (a *actual) compactPending() {
	x := a.idx
	x.pending = slices.DeleteFunc(x.pending, func(ref uint32) bool { return a.unindexedAt(ref) == nil })
	slices.Sort(x.pending)
	x.pending = slices.Compact(x.pending)
}

// batch starts (on) or ends a full pass: the keys it holds go into the
// byte index in one batch afterwards (tidy).
func (a *actual) batch(on bool, expect int) {
	if a.idx == nil {
		return
	}
	a.idx.batching = on
	if on {
		// The keys not in the target yet are about to be, and listed for
		// the index: make room for them at once.
		a.idx.pending = slices.Grow(a.idx.pending, max(0, expect))
	}
}

// tidy puts the pending keys in the byte index in one batch, pending
// keeping the keys it cannot take, and settles the index after a full
// read (byteindex.Index.Settle), so that the next read, if the target
// returns its entries in the same order, finds them in order. The loop
// calls it when it has nothing to write; it does nothing when there is
// nothing to tidy.
func (a *actual) tidy() {
	x := a.idx
	if x == nil {
		return
	}
	if len(x.pending) > 0 {
		a.indexPending()
	}
	if x.unsettled {
		x.x.Settle()
		x.unsettled = false
	}
}

// indexPending puts the pending keys in the byte index in one batch;
// pending keeps the keys it cannot take.
func (a *actual) indexPending() {
	x := a.idx
	data, refs := make([][]byte, 0, len(x.pending)), make([]uint32, 0, len(x.pending))
	var keep []uint32
	for _, ref := range x.pending {
		ks := a.unindexedAt(ref)
		switch {
		case ks == nil:
		case ks.actual.Data == nil:
			keep = append(keep, ref)
		default:
			ks.step(onIndex) // taken: a slot listed twice is taken once
			data, refs = append(data, ks.actual.Data), append(refs, ref)
		}
	}
	ok := make([]bool, len(refs))
	x.x.PutMany(data, refs, ok)
	for i, ref := range refs {
		if ok[i] {
			x.unindexed--
		} else {
			a.keys.at(ref).step(onUnindex)
			keep = append(keep, ref)
		}
	}
	x.pending = keep
}

// seen reports whether the read numbered gen saw ks's actual entry
// already (marked in the byte index).
func (a *actual) seen(ks *keyState, gen uint32) bool {
	return ks.indexed() && a.idx.x.Marked(ks.actual.Data, gen)
}

// mark marks ks's actual entry, indexed, as seen by the read numbered gen.
func (a *actual) mark(ks *keyState, gen uint32) {
	if ks.indexed() {
		a.idx.x.Mark(ks.actual.Data, gen)
	}
}

// scan reads target, read in chunks, as the read numbered gen: an entry
// the target holds with the bytes the loop knows is only marked as seen,
// in the byte index (one probe of one cache line instead of a lookup by
// key), and found is called with every other entry.
func (a *actual) scan(ctx context.Context, target node.Chunked, gen uint32, found func(node.Entry)) error {
	a.tidy()
	x := a.idx
	err := target.ScanActual(ctx, func(data []byte, width int, known []bool) { x.x.MarkMany(data, width, gen, known) }, found)
	x.unsettled = true
	return err
}

// unseen calls lose with every key the target held before the read
// numbered gen that the read did not see: the indexed keys it did not
// mark, found in the index's slot order without touching the others'
// states, and the other keys not in seen.
func (a *actual) unseen(gen uint32, seen slots, lose func(*keyState)) {
	x := a.idx
	if x == nil {
		for ks := range a.keys.states {
			if ks.inTarget() && !seen.has(ks.ref) {
				lose(ks)
			}
		}
		return
	}
	for _, ref := range x.x.AppendUnmarked(nil, gen) {
		if ks := a.keys.at(ref); ks != nil && ks.indexed() {
			lose(ks)
		}
	}
	if x.unindexed > 0 {
		for _, ref := range x.pending {
			if ks := a.unindexedAt(ref); ks != nil && !seen.has(ks.ref) {
				lose(ks)
			}
		}
	}
}
