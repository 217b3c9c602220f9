package engine

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
)

// DefaultQueueLimit is the number of deltas a subscription may hold before
// it is marked dirty and resynchronised from the collection's state.
const DefaultQueueLimit = 8192

// collection is one node's output: its current state, its generation and
// its subscribers. It implements node.Output for the producing node.
//
// Every subscriber has a bounded queue. When a batch does not fit, the
// queue is dropped and the subscriber is marked dirty: its next event is a
// Reset holding a copy of the state. Nothing is lost, memory stays bounded,
// and per-key order holds because a snapshot is always the latest state.
type collection struct {
	mu     sync.Mutex
	state  map[node.Key]slot
	gen    uint64
	synced bool
	subs   []*subscription
	limit  int
	stats  *nodeStats
	// origin is given to records published without one: a source that
	// says nothing about its records still names itself. nil for
	// transforms, whose records keep the origin they came with.
	origin *node.Origin
	tap    *tapPort // tap.go
}

// slot is one record of a collection: its value (packed when the producer
// handed it so: node.PackedVal), kept compact (node.Compact), and its
// origin, both shared by reference with the other stages.
type slot struct {
	v any
	o *node.Origin
}

// same reports whether a and b are equal values: two packed forms compare
// as node.Packed.Same says, without building either value.
func same(a, b cty.Value) bool {
	if node.IsPacked(a) == node.IsPacked(b) {
		return a.RawEquals(b)
	}
	return node.Unpack(a).RawEquals(node.Unpack(b))
}

// unpack builds the values of records and deltas handed over packed: what
// consumers receive. Callers run it outside the collection's lock, so
// that building a large snapshot (a source's 10,000 records at its first
// sync) never stalls the producer's Apply.
func unpack(records []node.Record, deltas []node.Delta) {
	for i := range records {
		records[i].Value = node.Unpack(records[i].Value)
	}
	for i := range deltas {
		deltas[i].Value = node.Unpack(deltas[i].Value)
	}
}

func newCollection(limit int, stats *nodeStats) *collection {
	if limit <= 0 {
		limit = DefaultQueueLimit
	}
	return &collection{state: map[node.Key]slot{}, limit: limit, stats: stats}
}

var _ node.Holder = (*collection)(nil)

// Apply implements node.Output. No-op deltas (deleting a missing key,
// upserting an equal value) are dropped so downstream sees only changes.
func (c *collection) Apply(deltas []node.Delta) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.applyLocked(deltas)
}

func (c *collection) applyLocked(deltas []node.Delta) {
	n := 0
	for _, d := range deltas {
		old, had := c.state[d.Key]
		if d.Delete {
			if !had {
				continue
			}
			delete(c.state, d.Key)
		} else {
			if d.Origin == nil {
				d.Origin = c.origin
				if had && old.o != nil {
					d.Origin = old.o
				}
			}
			if had && same(node.Expand(old.v), d.Value) {
				if d.Origin != old.o { // newer provenance, same value: nothing to publish
					c.state[d.Key] = slot{node.Compact(d.Value), d.Origin} // the older value is let go
				}
				continue
			}
			c.state[d.Key] = slot{node.Compact(d.Value), d.Origin}
		}
		deltas[n] = d
		n++
	}
	deltas = deltas[:n]
	if n == 0 {
		return
	}
	c.gen++
	if c.tap.active() {
		c.tap.deltas(deltas, c.gen)
	}
	c.stats.out(n, len(c.state))
	for _, s := range c.subs {
		s.push(deltas, c.limit)
	}
}

// Replace implements node.Output.
func (c *collection) Replace(records []node.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.state) == 0 { // the first state: everything is new
		c.state = make(map[node.Key]slot, len(records))
		deltas := make([]node.Delta, len(records))
		for i, r := range records {
			deltas[i] = node.Delta{Key: r.Key, Value: r.Value, Origin: r.Origin}
		}
		c.applyLocked(deltas)
		return
	}
	// A source that publishes by Replace (files, static) hands over no
	// time: its changes enter the pipeline here, which is where
	// pipeline_change_latency_seconds counts from. A transform's changes
	// keep the time of the change they come from (none after a reset).
	var now time.Time
	if c.origin != nil {
		now = time.Now()
	}
	want := make(map[node.Key]struct{}, len(records))
	deltas := make([]node.Delta, 0)
	for _, r := range records {
		want[r.Key] = struct{}{}
		if old, ok := c.state[r.Key]; !ok || !same(node.Expand(old.v), r.Value) || (r.Origin != nil && r.Origin != old.o) {
			deltas = append(deltas, node.Delta{Key: r.Key, Value: r.Value, Origin: r.Origin, Time: now})
		}
	}
	for k := range c.state {
		if _, ok := want[k]; !ok {
			deltas = append(deltas, node.Delta{Key: k, Delete: true, Time: now})
		}
	}
	c.applyLocked(deltas)
}

// MarkSynced implements node.Output.
func (c *collection) MarkSynced() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.synced {
		return
	}
	c.synced = true
	for _, s := range c.subs {
		s.signal()
	}
}

func (c *collection) isSynced() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.synced
}

// lookup returns one record of the state, its value built.
func (c *collection) lookup(k node.Key) (node.Record, bool) {
	r, ok := c.Held(k)
	r.Value = node.Unpack(r.Value) // the zero value when absent
	return r, ok
}

// Held implements node.Holder: the record at k as published.
func (c *collection) Held(k node.Key) (node.Record, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sl, ok := c.state[k]
	return node.Record{Key: k, Value: node.Expand(sl.v), Origin: sl.o}, ok
}

// HeldRecords implements node.Holder.
func (c *collection) HeldRecords() []node.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snapshotLocked()
}

func (c *collection) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.state)
}

// snapshot returns a copy of the state.
func (c *collection) snapshot() ([]node.Record, bool, uint64) {
	c.mu.Lock()
	out, synced, gen := c.snapshotLocked(), c.synced, c.gen
	c.mu.Unlock()
	unpack(out, nil)
	return out, synced, gen
}

// snapshotLocked copies the state; packed values stay packed (unpack).
func (c *collection) snapshotLocked() []node.Record {
	out := make([]node.Record, 0, len(c.state))
	for k, sl := range c.state {
		out = append(out, node.Record{Key: k, Value: node.Expand(sl.v), Origin: sl.o})
	}
	return out
}

// subscribe attaches a consumer. Its first event is a Reset.
func (c *collection) subscribe(stats *nodeStats) *subscription {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := &subscription{c: c, dirty: true, ready: make(chan struct{}, 1), stats: stats}
	s.ready <- struct{}{}
	c.subs = append(c.subs, s)
	return s
}

func (c *collection) unsubscribe(s *subscription) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.subs = slices.DeleteFunc(c.subs, func(x *subscription) bool { return x == s })
}

// subscription is a consumer's bounded view of a collection. Its fields are
// guarded by the collection's mutex.
type subscription struct {
	c          *collection
	queue      []node.Delta
	dirty      bool
	sentSynced bool
	ready      chan struct{}
	stats      *nodeStats
	busy       bool // an event was taken and the consumer has not asked again (sandbox.go)
	// packed hands values on as their producer emitted them, without
	// building a packed one: the consumer is a node.PackedInput.
	packed bool
}

var _ node.Poller = (*subscription)(nil)

func (s *subscription) push(deltas []node.Delta, limit int) {
	if s.dirty {
		return // a Reset is already due; it will carry these changes
	}
	if len(s.queue)+len(deltas) > limit {
		s.queue = nil
		s.dirty = true
		s.stats.overflow()
	} else {
		s.queue = append(s.queue, deltas...)
	}
	s.stats.queue(len(s.queue))
	s.signal()
}

// waiting reports whether s holds deltas or a Reset its consumer has not
// taken.
func (s *subscription) waiting() bool { return len(s.queue) > 0 || s.dirty }

func (s *subscription) signal() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// Ready is signalled when an event may be available.
func (s *subscription) Ready() <-chan struct{} { return s.ready }

// Poll implements node.Poller: the pending event, without blocking; ok is
// false when there is none. Its values are built outside the lock (unpack).
func (s *subscription) Poll() (node.Event, bool) {
	ev, ok := s.take()
	if !s.packed {
		unpack(ev.Snapshot, ev.Deltas)
	}
	return ev, ok
}

func (s *subscription) take() (node.Event, bool) {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	ev := node.Event{Synced: c.synced, Generation: c.gen}
	switch {
	case s.dirty:
		ev.Reset, ev.Snapshot = true, c.snapshotLocked()
		s.dirty, s.queue = false, nil
		s.stats.in(len(ev.Snapshot))
	case len(s.queue) > 0:
		ev.Deltas, s.queue = s.queue, nil
		s.stats.in(len(ev.Deltas))
	case c.synced && !s.sentSynced:
	default:
		s.busy = false
		return node.Event{}, false
	}
	s.busy = true
	s.sentSynced = s.sentSynced || c.synced
	s.stats.queue(0)
	return ev, true
}

// Next implements node.Input.
func (s *subscription) Next(ctx context.Context) (node.Event, error) {
	for {
		if ev, ok := s.Poll(); ok {
			return ev, nil
		}
		select {
		case <-s.ready:
		case <-ctx.Done():
			return node.Event{}, ctx.Err()
		}
	}
}
