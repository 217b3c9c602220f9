package engine

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/pipeline/pipeline/engine/node"
)

// Sandbox runs a compiled graph for a config test: the test feeds the
// sources' collections, transforms and sink loops are the real ones, time
// is a VirtualClock, and each sink writes into memory through its real
// encoding (node.Encoder), so the test sees the bytes a map would hold
// without touching any target.
type Sandbox struct {
	rt      *Runtime
	clock   *VirtualClock
	mems    map[string]*memTarget
	readers map[*collection]int // subscribers each collection must have before the graph is at rest
	cancel  context.CancelFunc
	done    chan struct{}
}

// Epoch is where a sandbox's virtual clock starts; test times are offsets from it.
var Epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// NewSandbox prepares g (built, as for run) for a config test.
func NewSandbox(g *Graph, logger *slog.Logger) (*Sandbox, error) {
	rt, err := NewRuntime(g, RunOptions{Logger: logger, DrainTimeout: time.Second})
	if err != nil {
		return nil, err
	}
	sb := &Sandbox{rt: rt, clock: NewVirtualClock(Epoch), mems: map[string]*memTarget{}, readers: map[*collection]int{}}
	rt.sandbox, rt.clock = true, sb.clock
	for _, n := range g.Nodes {
		if n.Kind != node.KindSource {
			sb.readers[rt.inputOf(n)]++
		}
		if rt.fanins[n] != nil {
			for _, in := range n.Inputs {
				sb.readers[rt.outs[in]]++ // the union's own subscription
			}
		}
		if s := rt.sinks[n]; s != nil {
			m := &memTarget{state: map[node.Key]node.Entry{}}
			sb.mems[n.Address] = m
			s.memOpen = m.opener(s.n)
		}
	}
	return sb, nil
}

// Start runs the transforms and sink loops until Stop.
func (sb *Sandbox) Start(ctx context.Context) {
	ctx, sb.cancel = context.WithCancel(ctx)
	sb.done = make(chan struct{})
	go func() {
		defer close(sb.done)
		_ = sb.rt.Run(ctx)
	}()
}

// Stop ends the run and waits for every node to return.
func (sb *Sandbox) Stop() {
	if sb.cancel != nil {
		sb.cancel()
		<-sb.done
	}
}

// Now is the virtual time as an offset from Epoch.
func (sb *Sandbox) Now() time.Duration { return sb.clock.Now().Sub(Epoch) }

// source returns the collection of the source at addr.
func (sb *Sandbox) source(addr string) (*collection, error) {
	n := sb.rt.g.Node(addr)
	if n == nil || n.Kind != node.KindSource {
		return nil, fmt.Errorf("%s: no such source", addr)
	}
	return sb.rt.outs[n], nil
}

// Apply publishes deltas as the source at addr would, stamped with the virtual time.
func (sb *Sandbox) Apply(addr string, deltas []node.Delta) error {
	c, err := sb.source(addr)
	if err != nil {
		return err
	}
	now := sb.clock.Now()
	for i := range deltas {
		deltas[i].Time = now
	}
	c.Apply(deltas)
	return nil
}

// MarkSynced marks the source at addr as having delivered its initial state.
func (sb *Sandbox) MarkSynced(addr string) error {
	c, err := sb.source(addr)
	if err != nil {
		return err
	}
	c.MarkSynced()
	return nil
}

// AdvanceTo moves virtual time to at (an offset from Epoch), firing every
// timer on the way in order and letting the graph come to rest after each.
func (sb *Sandbox) AdvanceTo(ctx context.Context, at time.Duration) error {
	target := Epoch.Add(at)
	for {
		if err := sb.Settle(ctx); err != nil {
			return err
		}
		due, ok := sb.clock.next()
		if !ok || due.After(target) {
			break
		}
		sb.clock.set(due)
	}
	sb.clock.set(target)
	return sb.Settle(ctx)
}

// Settle waits until the graph is at rest: every input queue empty and
// taken up, every fired timer handled, every sink loop idle. It polls in
// real time, and fails when ctx ends first.
func (sb *Sandbox) Settle(ctx context.Context) error {
	wait := 50 * time.Microsecond
	for !sb.atRest() {
		if err := sb.failed(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("graph did not come to rest: %w", ctx.Err())
		case <-time.After(wait):
		}
		wait = min(wait*2, 5*time.Millisecond)
	}
	return nil
}

// failed returns the error of a node that failed: in a config test a
// failure is the answer, not something to retry.
func (sb *Sandbox) failed() error {
	for _, n := range sb.rt.g.Nodes {
		h := sb.rt.healths[n]
		h.mu.Lock()
		restarts, detail := h.restarts, h.engMsg
		h.mu.Unlock()
		if restarts > 0 {
			return fmt.Errorf("%s failed: %s", n.Address, detail)
		}
	}
	return nil
}

func (sb *Sandbox) atRest() bool {
	if !sb.clock.settled() {
		return false
	}
	for _, f := range sb.rt.fanins {
		if f.inflight.Load() != 0 {
			return false
		}
	}
	for c, readers := range sb.readers {
		c.mu.Lock()
		// A synced marker not yet taken is pending too: a consumer that
		// acts on it alone (transform aggregate evaluates once synced)
		// has work left.
		rest := len(c.subs) >= readers && !slices.ContainsFunc(c.subs, func(s *subscription) bool {
			return s.waiting() || s.busy || (c.synced && !s.sentSynced)
		})
		c.mu.Unlock()
		if !rest {
			return false
		}
	}
	for _, s := range sb.rt.sinks {
		if !s.Idle() {
			return false
		}
	}
	return true
}

// SinkState is what a sink's target holds, sorted by key.
func (sb *Sandbox) SinkState(addr string) ([]node.Entry, error) {
	m, ok := sb.mems[addr]
	if !ok {
		return nil, fmt.Errorf("%s: no such sink", addr)
	}
	return m.entries(), nil
}

// SinkWrites returns the entries a sink applied since the last call, in order.
func (sb *Sandbox) SinkWrites(addr string) ([]AppliedEntry, error) {
	m, ok := sb.mems[addr]
	if !ok {
		return nil, fmt.Errorf("%s: no such sink", addr)
	}
	return m.takeWrites(), nil
}

// SinkContent is the document a sink that renders one (node.Renderer)
// would write for what its target holds; ok is false for other sinks.
func (sb *Sandbox) SinkContent(addr string) (content string, ok bool, err error) {
	m, found := sb.mems[addr]
	n := sb.rt.g.Node(addr)
	if !found || n == nil {
		return "", false, fmt.Errorf("%s: no such sink", addr)
	}
	r, isRenderer := n.Sink.(node.Renderer)
	if !isRenderer {
		return "", false, nil
	}
	b, err := r.Render(m.entries())
	if err != nil {
		return "", true, fmt.Errorf("%s: %w", addr, err)
	}
	return string(b), true, nil
}
