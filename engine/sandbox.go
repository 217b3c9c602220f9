package engine

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/pipeline/pipeline/engine/graph"
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
func NewSandbox(g *graph.Graph, logger *slog.Logger) (*Sandbox, error) {
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
		if rt.nodes[n].fanIn != nil {
			for _, in := range n.Inputs {
				sb.readers[rt.nodes[in].out]++ // the union's own subscription
			}
		}
		if s := rt.nodes[n].sink; s != nil {
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
	return sb.rt.nodes[n].out, nil
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
		h := sb.rt.nodes[n].health
		h.mu.Lock()
		restarts, detail := h.restarts, h.engMsg
		h.mu.Unlock()
		if restarts > 0 {
			return fmt.Errorf("%s failed: %s", n.Address, detail)
		}
	}
	return nil
}

// atRest reports whether the graph is at rest. Its checks look at one
// node after another while the others run, so a node may publish into a
// collection already looked at; the graph is at rest only when no
// collection's generation moved while the checks ran.
func (sb *Sandbox) atRest() bool {
	before := sb.generations()
	return sb.quiet() && sb.generations() == before
}

// generations sums the generations of the collections nodes read.
func (sb *Sandbox) generations() uint64 {
	var sum uint64
	for c := range sb.readers {
		c.mu.Lock()
		sum += c.gen
		c.mu.Unlock()
	}
	return sum
}

// quiet reports whether, node by node, nothing is left to do: the clock's
// fired timers taken up, no fan-in in flight, every input queue empty and
// taken up, every sink loop idle.
func (sb *Sandbox) quiet() bool {
	if !sb.clock.settled() {
		return false
	}
	for _, rn := range sb.rt.nodes {
		if rn.fanIn != nil && rn.fanIn.inflight.Load() != 0 {
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
	for _, rn := range sb.rt.nodes {
		if rn.sink != nil && !rn.sink.Idle() {
			return false
		}
	}
	return true
}

// SinkState is what a sink's target holds, sorted by key.
func (sb *Sandbox) SinkState(addr string) ([]node.Entry, error) {
	m, err := sb.mem(addr)
	if err != nil {
		return nil, err
	}
	return m.entries(), nil
}

// SinkWrites returns the entries a sink applied since the last call, in order.
func (sb *Sandbox) SinkWrites(addr string) ([]AppliedEntry, error) {
	m, err := sb.mem(addr)
	if err != nil {
		return nil, err
	}
	return m.takeWrites(), nil
}

// mem is the in-memory target of the sink at addr.
func (sb *Sandbox) mem(addr string) (*memTarget, error) {
	if m, ok := sb.mems[addr]; ok {
		return m, nil
	}
	return nil, fmt.Errorf("%s: no such sink", addr)
}

// SinkContent is the document a sink that renders one (node.Renderer)
// would write for what its target holds; ok is false for other sinks.
func (sb *Sandbox) SinkContent(addr string) (content string, ok bool, err error) {
	m, err := sb.mem(addr)
	if err != nil {
		return "", false, err
	}
	r, isRenderer := sb.rt.g.Node(addr).Sink.(node.Renderer)
	if !isRenderer {
		return "", false, nil
	}
	b, err := r.Render(m.entries())
	if err != nil {
		return "", true, fmt.Errorf("%s: %w", addr, err)
	}
	return string(b), true, nil
}

// AppliedEntry is one write a sandboxed sink applied.
type AppliedEntry struct {
	Delete bool
	Entry  node.Entry
}

// memTarget is a sink's target in a config test: it holds entries in
// memory and encodes them with the sink's own Prepare.
type memTarget struct {
	prep   func(node.Record) (node.Entry, error) // the sink's node.Encoder; nil: records as they are
	mu     sync.Mutex
	state  map[node.Key]node.Entry
	writes []AppliedEntry
}

// opener returns the sink loop's open function for n.
func (m *memTarget) opener(n *graph.Node) func(context.Context, node.Env) (node.Target, error) {
	return func(_ context.Context, env node.Env) (node.Target, error) {
		if enc, ok := n.Sink.(node.Encoder); ok {
			p, err := enc.Encoder(env)
			if err != nil {
				return nil, fmt.Errorf("%s: encoder: %w", n.Address, err)
			}
			m.prep = p
		}
		return m, nil
	}
}

func (m *memTarget) Prepare(r node.Record) (node.Entry, error) {
	if m.prep == nil {
		return node.Entry{Key: r.Key, Value: r.Value}, nil
	}
	return m.prep(r)
}

func (m *memTarget) Actual(context.Context) ([]node.Entry, error) { return m.entries(), nil }

func (m *memTarget) Update(_ context.Context, batch []node.Entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range batch {
		m.state[e.Key] = e
		m.writes = append(m.writes, AppliedEntry{Entry: e})
	}
}

func (m *memTarget) Delete(_ context.Context, batch []node.Entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range batch {
		delete(m.state, e.Key)
		m.writes = append(m.writes, AppliedEntry{Delete: true, Entry: e})
	}
}

func (m *memTarget) Close() error { return nil }

func (m *memTarget) entries() []node.Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.SortedFunc(maps.Values(m.state), func(a, b node.Entry) int { return cmp.Compare(a.Key, b.Key) })
}

func (m *memTarget) takeWrites() []AppliedEntry {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.writes
	m.writes = nil
	return w
}

var _ node.Target = (*memTarget)(nil)

// VirtualClock is a node.Clock whose time moves only when a config test
// moves it. It also tells the test when every fired timer was taken up:
// a fired timer is outstanding until its owner resets or stops it, which
// node.ConsumeTimed does after every wake-up.
type VirtualClock struct {
	mu          sync.Mutex
	now         time.Time
	timers      map[*vtimer]struct{}
	outstanding int
}

// NewVirtualClock returns a clock standing at start.
func NewVirtualClock(start time.Time) *VirtualClock {
	return &VirtualClock{now: start, timers: map[*vtimer]struct{}{}}
}

type vtimer struct {
	c      *VirtualClock
	ch     chan time.Time
	when   time.Time
	active bool
	fired  bool // fired and not yet reset or stopped by its owner
}

// Now implements node.Clock.
func (c *VirtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer implements node.Clock.
func (c *VirtualClock) NewTimer(d time.Duration) node.Timer {
	t := &vtimer{c: c, ch: make(chan time.Time, 1)}
	c.mu.Lock()
	c.timers[t] = struct{}{}
	c.mu.Unlock()
	t.Reset(d)
	return t
}

func (t *vtimer) C() <-chan time.Time { return t.ch }

func (t *vtimer) Reset(d time.Duration) bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	was := t.stopLocked()
	t.when, t.active = c.now.Add(d), true
	if d <= 0 {
		c.fireLocked(t)
	}
	return was
}

func (t *vtimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.stopLocked()
}

// stopLocked disarms t and takes back a value it sent and nobody received.
func (t *vtimer) stopLocked() bool {
	was := t.active
	t.active = false
	if t.fired {
		t.fired = false
		t.c.outstanding--
	}
	select {
	case <-t.ch:
	default:
	}
	return was
}

func (c *VirtualClock) fireLocked(t *vtimer) {
	t.active = false
	select {
	case t.ch <- c.now:
	default:
	}
	if !t.fired {
		t.fired = true
		c.outstanding++
	}
}

// next returns the earliest time an armed timer waits for.
func (c *VirtualClock) next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var due time.Time
	ok := false
	for t := range c.timers {
		if t.active && (!ok || t.when.Before(due)) {
			due, ok = t.when, true
		}
	}
	return due, ok
}

// set moves the clock to at (never backwards) and fires every timer due.
func (c *VirtualClock) set(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if at.After(c.now) {
		c.now = at
	}
	for t := range c.timers {
		if t.active && !t.when.After(c.now) {
			c.fireLocked(t)
		}
	}
}

// settled reports whether every fired timer was taken up.
func (c *VirtualClock) settled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.outstanding == 0
}

var _ node.Clock = (*VirtualClock)(nil)
