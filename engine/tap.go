package engine

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
)

// TapEvent is one delta seen at a tapped node: for a source or transform, a
// change of its output collection; for a sink, an entry its target applied
// (in the target's form: a BPF map entry's Value is its bytes in hex).
type TapEvent struct {
	Time time.Time
	Node string
	// Delete is true for a delete; Value is then cty.NilVal.
	Delete bool
	Key    node.Key
	Value  cty.Value
	// Generation is the collection generation after the batch (0 for sinks).
	Generation uint64
}

// tapHub hands a node's deltas to the taps attached to it. With no tap
// attached, the data path pays one atomic load per batch (active).
type tapHub struct {
	addr  string
	n     atomic.Int32
	mu    sync.Mutex
	taps  map[*Tap]struct{}
	clock func() time.Time
}

// Tap is one client's live view of a node's deltas. Events that do not fit
// its buffer are dropped and counted: a slow tap never slows the pipeline.
type Tap struct {
	// C delivers the events; it is never closed (select on your context).
	C       <-chan TapEvent
	ch      chan TapEvent
	hub     *tapHub
	dropped atomic.Uint64
	once    sync.Once
}

// active reports whether anyone taps; nil-safe.
func (h *tapHub) active() bool { return h != nil && h.n.Load() > 0 }

// deltas publishes a collection's batch (after no-ops were dropped).
func (h *tapHub) deltas(ds []node.Delta, gen uint64) {
	now := h.clock()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, d := range ds {
		h.sendLocked(TapEvent{Time: now, Node: h.addr, Delete: d.Delete, Key: d.Key, Value: d.Value, Generation: gen})
	}
}

// applied publishes one entry a sink's target applied.
func (h *tapHub) applied(e node.Entry, del bool) {
	ev := TapEvent{Time: h.clock(), Node: h.addr, Delete: del, Key: e.Key}
	if !del {
		ev.Value = e.Value
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sendLocked(ev)
}

func (h *tapHub) sendLocked(ev TapEvent) {
	for t := range h.taps {
		select {
		case t.ch <- ev:
		default:
			t.dropped.Add(1)
		}
	}
}

// Dropped is the number of events that did not fit the tap's buffer.
func (t *Tap) Dropped() uint64 { return t.dropped.Load() }

// Close detaches the tap; it is idempotent.
func (t *Tap) Close() {
	t.once.Do(func() {
		t.hub.mu.Lock()
		delete(t.hub.taps, t)
		t.hub.mu.Unlock()
		t.hub.n.Add(-1)
	})
}

// Tap attaches a live view to the node at addr, holding up to buffer
// events (at least 1). Close it when done.
func (r *Runtime) Tap(addr string, buffer int) (*Tap, error) {
	n := r.g.Node(addr)
	if n == nil {
		return nil, fmt.Errorf("tap %s: no such node", addr)
	}
	h := r.taps[n]
	if h == nil {
		return nil, fmt.Errorf("tap %s: a node added by a reload cannot be tapped until the next restart", addr)
	}
	t := &Tap{ch: make(chan TapEvent, max(buffer, 1)), hub: h}
	t.C = t.ch
	h.mu.Lock()
	h.taps[t] = struct{}{}
	h.mu.Unlock()
	h.n.Add(1)
	return t, nil
}

// initTaps gives every node a tap hub, wired into its collection or sink loop.
func (r *Runtime) initTaps() {
	r.taps = make(map[*Node]*tapHub, len(r.g.Nodes))
	for _, n := range r.g.Nodes {
		h := &tapHub{addr: n.Address, taps: map[*Tap]struct{}{}, clock: r.now}
		r.taps[n] = h
		if c := r.outs[n]; c != nil {
			c.tap = h
		}
		if s := r.sinks[n]; s != nil {
			s.tap = h
		}
	}
}

// now is the runtime's clock: the wall clock, or a config test's virtual one.
func (r *Runtime) now() time.Time {
	if r.clock != nil {
		return r.clock.Now()
	}
	return time.Now()
}
