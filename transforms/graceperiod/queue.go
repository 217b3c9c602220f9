package graceperiod

import (
	"container/heap"
	"sort"
	"sync"
	"time"

	"github.com/pipeline/pipeline/engine/node"
)

// PendingDelete is a deletion waiting for its grace period.
type PendingDelete struct {
	Key node.Key
	Due time.Time
}

type item struct {
	key   node.Key
	due   time.Time
	since time.Time // receipt time of the delete, for latency
	index int
}

// queue is a min-heap of pending deletions by due time, indexed by key. Its
// mutex lets Pending read it from other goroutines.
type queue struct {
	mu    sync.Mutex
	items []*item
	byKey map[node.Key]*item
}

func newQueue() *queue { return &queue{byKey: map[node.Key]*item{}} }

func (q *queue) Len() int           { return len(q.items) }
func (q *queue) Less(i, j int) bool { return q.items[i].due.Before(q.items[j].due) }
func (q *queue) Swap(i, j int) {
	q.items[i], q.items[j] = q.items[j], q.items[i]
	q.items[i].index, q.items[j].index = i, j
}
func (q *queue) Push(x any) { it := x.(*item); it.index = len(q.items); q.items = append(q.items, it) }
func (q *queue) Pop() any {
	n := len(q.items)
	it := q.items[n-1]
	q.items[n-1] = nil
	q.items = q.items[:n-1]
	return it
}

// schedule adds a deletion or restarts its wait.
func (q *queue) schedule(k node.Key, due, since time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if it, ok := q.byKey[k]; ok {
		it.due, it.since = due, since
		heap.Fix(q, it.index)
		return
	}
	it := &item{key: k, due: due, since: since}
	q.byKey[k] = it
	heap.Push(q, it)
}

// cancel removes a pending deletion; it reports whether one was pending.
func (q *queue) cancel(k node.Key) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	it, ok := q.byKey[k]
	if !ok {
		return false
	}
	heap.Remove(q, it.index)
	delete(q.byKey, k)
	return true
}

// popDue removes and returns the deletions due at now.
func (q *queue) popDue(now time.Time) []*item {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []*item
	for len(q.items) > 0 && !q.items[0].due.After(now) {
		it := heap.Pop(q).(*item)
		delete(q.byKey, it.key)
		out = append(out, it)
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

func (q *queue) list() []PendingDelete {
	q.mu.Lock()
	out := make([]PendingDelete, 0, len(q.items))
	for _, it := range q.items {
		out = append(out, PendingDelete{Key: it.key, Due: it.due})
	}
	q.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Due.Equal(out[j].Due) {
			return out[i].Due.Before(out[j].Due)
		}
		return out[i].Key < out[j].Key
	})
	return out
}

func (q *queue) clear() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.items, q.byKey = nil, map[node.Key]*item{}
}

func (q *queue) has(k node.Key) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.byKey[k]
	return ok
}
