package engine

import (
	"container/heap"
	"time"

	"github.com/pipeline/pipeline/engine/node"
)

// keyState is everything a sink loop knows about one target key: what the
// input wants there, what the target holds as far as the loop knows, and
// the key's write status. One struct per key, so a key costs one map entry.
type keyState struct {
	want node.Entry // valid while owners > 0
	have node.Entry // valid while applied
	// owners counts the input keys whose prepared entry has this key (two
	// input keys may map to one target key: 10.0.0.7 and 10.0.0.7/32).
	owners  int32
	self    bool // the input key equal to this target key is an owner
	applied bool // the target holds have, as far as the loop knows
	written bool // this run wrote it (prune = false deletes only these)
	dirty   bool // listed in sinkLoop.dirty, waiting to be looked at
	seen    uint32
	// changed is when the oldest change not yet applied entered the
	// pipeline, for the change-latency histogram; zero when unknown.
	changed time.Time

	// Write status: attempts since the last success, the last error and
	// when it happened, and the next retry (heapIdx < 0: not waiting).
	attempts  int
	lastErr   string
	lastErrAt time.Time
	retryAt   time.Time
	heapIdx   int
}

// idle reports whether the state holds nothing worth keeping.
func (ks *keyState) idle() bool {
	return ks.owners == 0 && !ks.applied && !ks.dirty && ks.heapIdx < 0
}

// retryHeap orders the keys waiting for a retry by due time.
type retryHeap struct {
	keys   []node.Key
	states []*keyState
}

func (h *retryHeap) Len() int           { return len(h.states) }
func (h *retryHeap) Less(i, j int) bool { return h.states[i].retryAt.Before(h.states[j].retryAt) }
func (h *retryHeap) Swap(i, j int) {
	h.keys[i], h.keys[j] = h.keys[j], h.keys[i]
	h.states[i], h.states[j] = h.states[j], h.states[i]
	h.states[i].heapIdx, h.states[j].heapIdx = i, j
}

// Push and Pop implement heap.Interface; use schedule and pop instead.
func (h *retryHeap) Push(x any) {
	it := x.(retryItem)
	it.ks.heapIdx = len(h.states)
	h.keys = append(h.keys, it.key)
	h.states = append(h.states, it.ks)
}

func (h *retryHeap) Pop() any {
	n := len(h.states) - 1
	it := retryItem{key: h.keys[n], ks: h.states[n]}
	it.ks.heapIdx = -1
	h.keys, h.states = h.keys[:n], h.states[:n]
	return it
}

type retryItem struct {
	key node.Key
	ks  *keyState
}

// schedule (re)arms the retry of key at ks.retryAt.
func (h *retryHeap) schedule(key node.Key, ks *keyState) {
	if ks.heapIdx >= 0 {
		heap.Fix(h, ks.heapIdx)
		return
	}
	heap.Push(h, retryItem{key: key, ks: ks})
}

// remove drops ks from the heap if it waits there.
func (h *retryHeap) remove(ks *keyState) {
	if ks.heapIdx >= 0 {
		heap.Remove(h, ks.heapIdx)
	}
}

// due pops every key whose retry is due at now.
func (h *retryHeap) due(now time.Time, visit func(node.Key, *keyState)) {
	for len(h.states) > 0 && !h.states[0].retryAt.After(now) {
		it := heap.Pop(h).(retryItem)
		visit(it.key, it.ks)
	}
}

// next returns the earliest retry, or the zero time.
func (h *retryHeap) next() (node.Key, *keyState) {
	if len(h.states) == 0 {
		return "", nil
	}
	return h.keys[0], h.states[0]
}
