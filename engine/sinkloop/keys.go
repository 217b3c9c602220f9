package sinkloop

import (
	"bytes"
	"container/heap"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// keyState is everything a sink loop knows about one target key: what the
// input wants there (desired.go), what the target held there when last
// read, as the loop's own writes since changed it (actual.go), and the
// key's write status. One struct per key, kept in a keyStore.
type keyState struct {
	key  node.Key
	want keptEntry // valid while owners > 0
	// actual is the entry the target holds at the key, valid while
	// inTarget(): the one a read found or the loop last wrote there.
	// When it equals want it shares want's memory.
	actual keptEntry
	// owners counts the input keys whose prepared entry has this key (two
	// input keys may map to one target key: 10.0.0.7 and 10.0.0.7/32).
	owners int32
	ref    uint32   // the slot's number in its keyStore (keyStore.at)
	at     presence // whether the target holds the key (step changes it)
	self   bool     // the input key equal to this target key is an owner
	dirty  bool     // listed in state.dirty, waiting to be looked at
	braked bool     // its delete is held back by the deletion brake (brake.go)
	// changed is when the oldest change not yet applied entered the
	// pipeline (stamp), for the change-latency histogram; 0 when unknown.
	changed int64
	// fail is the write status of a key whose last write failed; nil for
	// the (many) keys whose writes succeed.
	fail *keyFailure
}

// presence is a key's lifecycle with its target, as far as the loop
// knows: whether the target holds an entry at the key, whether this run
// wrote that entry (prune = false deletes only those) or found it in a
// read, and whether the entry's bytes are in the byte index (actual.go).
// It changes only by step, through the steps table.
type presence uint8

const (
	free         presence = iota // the slot holds no key (keyStore)
	absent                       // the target holds nothing at the key
	found                        // it holds an entry a read found, not written by this run
	wrote                        // it holds the entry this run wrote
	foundIndexed                 // found, with the entry's bytes in the byte index
	wroteIndexed                 // wrote, with the entry's bytes in the byte index
)

// event is what happens to a key's presence.
type event uint8

const (
	onRead    event = iota // a full read found an entry at the key
	onWrite                // the loop wrote the key's entry
	onDrop                 // the entry is gone: deleted, or a full read did not find it
	onIndex                // the entry's bytes went into the byte index
	onUnindex              // the index could not take them
)

// steps is each presence's next one by event (onRead, onWrite, onDrop,
// onIndex, onUnindex).
var steps = [...][5]presence{
	free:         {free, free, free, free, free},
	absent:       {found, wrote, absent, absent, absent},
	found:        {found, wrote, absent, foundIndexed, found},
	wrote:        {wrote, wrote, absent, wroteIndexed, wrote},
	foundIndexed: {foundIndexed, wroteIndexed, absent, foundIndexed, found},
	wroteIndexed: {wroteIndexed, wroteIndexed, absent, wroteIndexed, wrote},
}

// step moves ks's presence on by ev.
func (ks *keyState) step(ev event) { ks.at = steps[ks.at][ev] }

// inTarget reports whether the target holds an entry at the key.
func (ks *keyState) inTarget() bool { return ks.at >= found }

// indexed reports whether the actual entry's bytes are in the byte index.
func (ks *keyState) indexed() bool { return ks.at >= foundIndexed }

// written reports whether the target holds the entry this run wrote.
func (ks *keyState) written() bool { return ks.at == wrote || ks.at == wroteIndexed }

// same reports whether the target holds what the input wants at the key:
// an explicit comparison of the two entries.
func (ks *keyState) same() bool {
	return ks.owners > 0 && ks.inTarget() && ks.actual.same(ks.want)
}

// keptEntry is what a key state keeps of an entry: its bytes (Data), and
// its value only where the target cannot show it from them
// (node.Chunked.ValueOf): for a target not written in chunks, and for a
// sensitive value, whose mark the bytes do not keep. Not its key (the
// state's) nor its error (a write's outcome, recorded in the state): 32
// bytes where a node.Entry takes 88.
type keptEntry struct {
	Data  []byte
	value *cty.Value
}

// keep is what a key state keeps of e, prepared or read by the target.
func (s *state) keep(e *node.Entry) keptEntry {
	k := keptEntry{Data: e.Data}
	if s.chunked == nil || e.Data == nil || schema.IsSensitive(e.Value) {
		v := e.Value
		k.value = &v
	}
	return k
}

// same is node.Entry.Same of the two entries: by their bytes when they
// carry them (Data), as every entry of an encoding target does; two
// packed values (node.PackedInput) by node.Packed.Same, unbuilt.
func (k keptEntry) same(o keptEntry) bool {
	if k.Data != nil || o.Data != nil {
		return bytes.Equal(k.Data, o.Data)
	}
	if k.value != nil && o.value != nil && node.IsPacked(*k.value) && node.IsPacked(*o.value) {
		return k.value.RawEquals(*o.value)
	}
	return k.entry("").Same(o.entry(""))
}

// shares reports whether k and o are one entry in memory: the same
// bytes and the same value, not only equal ones.
func (k keptEntry) shares(o keptEntry) bool {
	return len(k.Data) == len(o.Data) && (len(k.Data) == 0 || &k.Data[0] == &o.Data[0]) && k.value == o.value
}

// entry is k as the entry at key, with its value if kept (built if packed):
// enough to compare it, and to write it to a target not written in chunks.
func (k keptEntry) entry(key node.Key) node.Entry {
	e := node.Entry{Key: key, Data: k.Data}
	if k.value != nil {
		e.Value = node.Unpack(*k.value)
	}
	return e
}

// shown is k as the entry at key with its value as the target shows it,
// for a tap and explain.
func (s *state) shown(key node.Key, k keptEntry) node.Entry {
	e := k.entry(key)
	if k.value == nil && s.chunked != nil {
		e.Value = s.chunked.ValueOf(k.Data)
	}
	return e
}

// epoch is the origin of keyState.changed: a reading of the monotonic
// clock, so that a stamp takes 8 bytes where a time.Time takes 24.
var epoch = time.Now()

// stamp is t as a keyState.changed: 0 for the zero time. It may be
// negative (a time before epoch, such as a test's fake clock's).
func stamp(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	if c := int64(t.Sub(epoch)); c != 0 {
		return c
	}
	return 1
}

// since is the time elapsed since stamp c.
func since(c int64) time.Duration { return time.Since(epoch) - time.Duration(c) }

// keyFailure is the status of a key whose last write failed: attempts
// since the last success, the last error and when it happened, and the
// next retry (heapIdx < 0: not waiting).
type keyFailure struct {
	attempts  int
	lastErr   string
	lastErrAt time.Time
	retryAt   time.Time
	heapIdx   int
	// rejected says the last write got a permanent answer
	// (node.Rejected): it waits in no heap, and is written again only when
	// what it concerned changes (stillRejected) or at the next resync.
	// rejectedWant is the entry refused (rejectedDel: the delete was).
	rejected     bool
	rejectedDel  bool
	rejectedWant keptEntry
}

// waiting reports whether the key waits in the retry heap.
func (ks *keyState) waiting() bool { return ks.fail != nil && ks.fail.heapIdx >= 0 }

// idle reports whether the state holds nothing worth keeping.
func (ks *keyState) idle() bool {
	return ks.owners == 0 && !ks.inTarget() && !ks.dirty && ks.fail == nil
}

// keyStore holds a sink loop's key states in fixed-size slabs, found by
// key through an index. A pass over every key (a full reconcile, a read
// of the target) walks the slabs in memory order, which is about the
// order keys arrived and so the order their prepared entries were
// allocated in, instead of the index's random order: on 100,000 keys
// that pass stays in the caches. A freed slot is reused by the next new
// key; the slabs hold at most as many slots as the most keys stored at
// once, and go when the store empties.
type keyStore struct {
	index map[node.Key]*keyState
	slabs []*[keySlab]keyState
	used  int // slots handed out in the last slab
	free  []*keyState
}

const keySlab = 512

func newKeyStore() keyStore { return keyStore{index: map[node.Key]*keyState{}} }

// get returns the state of k, or nil.
func (st *keyStore) get(k node.Key) *keyState { return st.index[k] }

// len is the number of keys in the store.
func (st *keyStore) len() int { return len(st.index) }

// add returns a new state for k, which must not be in the store.
func (st *keyStore) add(k node.Key) *keyState {
	var ks *keyState
	if n := len(st.free); n > 0 {
		ks, st.free = st.free[n-1], st.free[:n-1]
	} else {
		if len(st.slabs) == 0 || st.used == keySlab {
			st.slabs = append(st.slabs, new([keySlab]keyState))
			st.used = 0
		}
		ks = &st.slabs[len(st.slabs)-1][st.used]
		ks.ref = uint32((len(st.slabs)-1)*keySlab + st.used)
		st.used++
	}
	*ks = keyState{key: k, at: absent, ref: ks.ref}
	st.index[k] = ks
	return ks
}

// at returns the state in slot ref (holding a key or not), or nil when
// the store has no such slot (it emptied since).
func (st *keyStore) at(ref uint32) *keyState {
	if int(ref/keySlab) >= len(st.slabs) {
		return nil
	}
	return &st.slabs[ref/keySlab][ref%keySlab]
}

// remove drops ks, which must be in the store and out of the retry heap.
func (st *keyStore) remove(ks *keyState) {
	delete(st.index, ks.key)
	*ks = keyState{ref: ks.ref} // a slot keeps its number for its next key
	if len(st.index) == 0 {
		st.slabs, st.used, st.free = nil, 0, nil
		return
	}
	st.free = append(st.free, ks)
}

// states yields every state in the store in slab order (range over it). The
// loop's body may remove any state (one not yielded yet is then skipped)
// and add states (which this pass may or may not yield). A range over it
// compiles to plain loops around the body, with no call per key.
func (st *keyStore) states(yield func(*keyState) bool) {
	for i := 0; i < len(st.slabs); i++ {
		slab := st.slabs[i]
		for j := range slab {
			if slab[j].at != free && !yield(&slab[j]) {
				return
			}
		}
	}
}

// slots is a set of slot numbers (keyState.ref): the keys a full read
// saw that the byte index did not mark (actual.go).
type slots []uint64

func (m *slots) add(ref uint32) {
	if i := int(ref / 64); i >= len(*m) {
		*m = append(*m, make([]uint64, i+1-len(*m))...)
	}
	(*m)[ref/64] |= 1 << (ref % 64)
}

func (m slots) has(ref uint32) bool {
	i := int(ref / 64)
	return i < len(m) && m[i]&(1<<(ref%64)) != 0
}

// retryHeap orders the keys waiting for a retry by due time.
type retryHeap []*keyState

func (h retryHeap) Len() int           { return len(h) }
func (h retryHeap) Less(i, j int) bool { return h[i].fail.retryAt.Before(h[j].fail.retryAt) }
func (h retryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].fail.heapIdx, h[j].fail.heapIdx = i, j
}

// Push and Pop implement heap.Interface; use schedule and pop instead.
func (h *retryHeap) Push(x any) {
	ks := x.(*keyState)
	ks.fail.heapIdx = len(*h)
	*h = append(*h, ks)
}

func (h *retryHeap) Pop() any {
	old := *h
	n := len(old) - 1
	ks := old[n]
	old[n] = nil
	ks.fail.heapIdx = -1
	*h = old[:n]
	return ks
}

// schedule (re)arms the retry of ks at ks.fail.retryAt.
func (h *retryHeap) schedule(ks *keyState) {
	if ks.waiting() {
		heap.Fix(h, ks.fail.heapIdx)
		return
	}
	heap.Push(h, ks)
}

// remove drops ks from the heap if it waits there.
func (h *retryHeap) remove(ks *keyState) {
	if ks.waiting() {
		heap.Remove(h, ks.fail.heapIdx)
	}
}

// due pops every key whose retry is due at now.
func (h *retryHeap) due(now time.Time, visit func(*keyState)) {
	for len(*h) > 0 && !(*h)[0].fail.retryAt.After(now) {
		visit(heap.Pop(h).(*keyState))
	}
}

// next returns the key of the earliest retry, or nil.
func (h retryHeap) next() *keyState {
	if len(h) == 0 {
		return nil
	}
	return h[0]
}
