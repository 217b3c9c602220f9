package graceperiod

import (
	"cmp"
	"container/heap"
	"slices"
	"sync"
	"time"

	"github.com/pipeline/pipeline/engine/node"
)

// PendingDelete is a deletion waiting for its grace period.
type PendingDelete = node.PendingDeletion

// item is one pending deletion. index is its position in the heap, kept up
// to date by Swap/Push, so a cancel or restart is O(log n) with no stale
// entries left behind.
type item struct {
	key   node.Key
	due   time.Time
	since time.Time // Time of the delete delta, carried to the output
	index int
}

// queue holds pending deletions: a min-heap by due time plus an index by
// key. Run's goroutine changes it; the mutex lets Pending and the gauge read
// it from other goroutines.
type queue struct {
	mu    sync.Mutex
	items heapItems
	byKey map[node.Key]*item
}

func newQueue() *queue { return &queue{byKey: map[node.Key]*item{}} }

// heapItems implements heap.Interface.
type heapItems []*item

func (h heapItems) Len() int           { return len(h) }
func (h heapItems) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h heapItems) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *heapItems) Push(x any) {
	it := x.(*item)
	it.index = len(*h)
	*h = append(*h, it)
}
func (h *heapItems) Pop() any {
	old := *h
	n := len(old)
	it := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return it
}

// schedule adds a deletion, or restarts the wait of one already pending.
func (q *queue) schedule(k node.Key, due, since time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if it, ok := q.byKey[k]; ok {
		it.due, it.since = due, since
		heap.Fix(&q.items, it.index)
		return
	}
	it := &item{key: k, due: due, since: since}
	q.byKey[k] = it
	heap.Push(&q.items, it)
}

// cancel removes a pending deletion; it reports whether one was pending.
func (q *queue) cancel(k node.Key) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	it, ok := q.byKey[k]
	if !ok {
		return false
	}
	heap.Remove(&q.items, it.index)
	delete(q.byKey, k)
	return true
}

// popDue removes and returns the deletions due at now, earliest first.
func (q *queue) popDue(now time.Time) []*item {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []*item
	for len(q.items) > 0 && !q.items[0].due.After(now) {
		it := heap.Pop(&q.items).(*item)
		delete(q.byKey, it.key)
		out = append(out, it)
	}
	if len(q.items) == 0 && cap(q.items) > 1024 {
		q.items = nil // let a drained burst's backing array go
	}
	return out
}

// next returns the earliest due time.
func (q *queue) next() (time.Time, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return time.Time{}, false
	}
	return q.items[0].due, true
}

func (q *queue) size() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

func (q *queue) has(k node.Key) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.byKey[k]
	return ok
}

// due returns when k's deletion passes, if it waits.
func (q *queue) due(k node.Key) (time.Time, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if it, ok := q.byKey[k]; ok {
		return it.due, true
	}
	return time.Time{}, false
}

// list copies the pending deletions sorted by due time, then key.
func (q *queue) list() []PendingDelete {
	q.mu.Lock()
	out := make([]PendingDelete, 0, len(q.items))
	for _, it := range q.items {
		out = append(out, PendingDelete{Key: it.key, Due: it.due})
	}
	q.mu.Unlock()
	slices.SortFunc(out, func(a, b PendingDelete) int {
		if c := a.Due.Compare(b.Due); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	return out
}

var _ heap.Interface = (*heapItems)(nil)
