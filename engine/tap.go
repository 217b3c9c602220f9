package engine

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
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
	// CollectionGeneration is the node's collection generation after the
	// batch (0 for sinks): not the config generation.
	CollectionGeneration uint64
	// Origin is the upserted record's provenance (nil for deletes). For a
	// sink it is the origin of the input record the key holds when the
	// entry is applied, so a fan-in sink's line says which input's data
	// it is; nil when the input no longer holds the key by then.
	Origin *node.Origin
}

// tapHub hands the deltas of the node at one address to the taps attached
// to it. A hub outlives the node instances at its address: a reload that
// rebuilds the node moves the hub's live port to the new instance at the
// swap, so a tap goes on streaming.
type tapHub struct {
	addr  string
	n     atomic.Int32
	mu    sync.Mutex
	taps  map[*Tap]struct{}
	clock func() time.Time
}

// tapPort is one node instance's way into its address's hub. Only the
// instance of the running graph is live: a node staged by a reload, or a
// retired one still draining, publishes nothing. With no tap attached, the
// data path pays one atomic load per batch (active).
type tapPort struct {
	hub  *tapHub
	live atomic.Bool
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

// active reports whether anyone taps this live instance; nil-safe.
func (p *tapPort) active() bool { return p != nil && p.hub.n.Load() > 0 && p.live.Load() }

// deltas publishes a collection's batch (after no-ops were dropped).
func (p *tapPort) deltas(ds []node.Delta, gen uint64) {
	h := p.hub
	now := h.clock()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, d := range ds {
		h.sendLocked(TapEvent{Time: now, Node: h.addr, Delete: d.Delete, Key: d.Key, Value: node.Unpack(d.Value), CollectionGeneration: gen, Origin: d.Origin})
	}
}

// tapped publishes one entry the sink's target applied, with the origin
// of the input record behind an upsert.
func (s *sink) tapped(e node.Entry, del bool) {
	var rec node.Record
	if !del {
		rec, _ = s.in.Held(e.Key)
	}
	s.tap.applied(e, del, rec.Origin)
}

// applied publishes one entry a sink's target applied.
func (p *tapPort) applied(e node.Entry, del bool, origin *node.Origin) {
	h := p.hub
	ev := TapEvent{Time: h.clock(), Node: h.addr, Delete: del, Key: e.Key}
	if !del {
		ev.Value, ev.Origin = e.Value, origin
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
// events (at least 1). Close it when done. The tap follows the address,
// not one instance: after a reload that rebuilds the node, it shows the new
// node's deltas from the swap on; after a reload that removes the node, it
// shows nothing until a later reload adds a node at that address again.
func (r *Runtime) Tap(addr string, buffer int) (*Tap, error) {
	r.mu.RLock()
	defer r.mu.RUnlock() // a reload's swap forgets unused hubs under r.mu
	if r.g.Node(addr) == nil {
		names := make([]string, 0, len(r.g.Nodes))
		for _, n := range r.g.Nodes {
			names = append(names, n.Address)
		}
		if s := schema.DidYouMean(addr, names); s != "" {
			return nil, fmt.Errorf("tap %s: no such node; did you mean %s?", addr, s)
		}
		return nil, fmt.Errorf("tap %s: no such node (the nodes: %s)", addr, strings.Join(names, ", "))
	}
	h := r.taps[addr]
	if h == nil {
		return nil, fmt.Errorf("tap %s: the node has no tap hub", addr) // programmer error: addLocked makes one
	}
	t := &Tap{ch: make(chan TapEvent, max(buffer, 1)), hub: h}
	t.C = t.ch
	h.mu.Lock()
	h.taps[t] = struct{}{}
	h.mu.Unlock()
	h.n.Add(1)
	return t, nil
}

// tapPortLocked returns a port into the hub at n's address, making the hub
// if need be. The port is live when n belongs to the running graph; a node
// staged by a reload goes live at the swap (setTapsLive).
func (r *Runtime) tapPortLocked(n *graph.Node) *tapPort {
	h := r.taps[n.Address]
	if h == nil {
		h = &tapHub{addr: n.Address, taps: map[*Tap]struct{}{}, clock: r.now}
		r.taps[n.Address] = h
	}
	p := &tapPort{hub: h}
	p.live.Store(r.g.Node(n.Address) == n)
	return p
}

// tapPortOf returns the port of n's collection or sink loop, or nil.
func (r *Runtime) tapPortOf(n *graph.Node) *tapPort {
	rn := r.nodes[n]
	switch {
	case rn == nil:
		return nil
	case rn.sink != nil:
		return rn.sink.tap
	}
	return rn.out.tap
}

// setTapsLive hands every hub of a reload's changed addresses from the
// retired instances to the fresh ones; r.mu is held.
func (r *Runtime) setTapsLive(fresh, retired []*graph.Node) {
	for _, o := range retired {
		if p := r.tapPortOf(o); p != nil {
			p.live.Store(false)
		}
	}
	for _, n := range fresh {
		if p := r.tapPortOf(n); p != nil {
			p.live.Store(true)
		}
	}
}

// forgetTapLocked drops the hub of an address the running graph no longer
// has, unless a tap still waits on it.
func (r *Runtime) forgetTapLocked(addr string) {
	if h := r.taps[addr]; h != nil && r.g.Node(addr) == nil && h.n.Load() == 0 {
		delete(r.taps, addr)
	}
}

// now is the runtime's clock: the wall clock, or a config test's virtual one.
func (r *Runtime) now() time.Time {
	if r.clock != nil {
		return r.clock.Now()
	}
	return time.Now()
}
