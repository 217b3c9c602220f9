package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/backoff"
)

// RunOptions configure a Runtime.
type RunOptions struct {
	Logger  *slog.Logger
	Metrics *Metrics
	// QueueLimit bounds each subscription (deltas); DefaultQueueLimit when 0.
	QueueLimit int
	// DrainTimeout bounds how long shutdown waits, after the sources
	// stopped, for in-flight deltas to reach the sinks. Default 5s.
	DrainTimeout time.Duration
	// Leader, when set, lets the sinks write only while this instance
	// leads (leader_election); nil means always.
	Leader *Leadership
}

// Runtime runs a compiled graph, and replaces it on Reload.
type Runtime struct {
	opts RunOptions
	dec  *decisions

	// mu guards the graph and the node records, which Reload changes
	// while nodes run. They are keyed by *Node, so the nodes of a reload
	// being staged live beside the running ones.
	mu      sync.RWMutex
	g       *graph.Graph
	nodes   records
	srcCtx  context.Context    // parent of the sources' contexts, set by Run
	restCtx context.Context    // parent of the other nodes' contexts
	reload  reloadState        // reload.go
	taps    map[string]*tapHub // by address (tap.go)
	clock   node.Clock         // nil: the wall clock; a config test's virtual clock
	sandbox bool               // a config test drives the sources (sandbox.go)
	oneShot bool               // plan: nodes run until synced (node.Env.OneShot)
}

// running is one node as the runtime keeps it, from addLocked to
// removeLocked. task, staged and reg change after addLocked, under
// Runtime.mu.
type running struct {
	health *health
	stats  *nodeStats
	out    *collection // a source's or transform's output; nil for a sink
	sink   *sink       // a sink's loop; nil for the others
	fanIn  *fanIn      // the union a node with several inputs consumes (fanin.go)
	task   *task       // its supervised goroutine, once started
	// staged marks a node a reload starts beside the running graph; its
	// runs register their metrics on reg, which the swap publishes (env).
	staged bool
	reg    *prometheus.Registry
}

// records are the nodes' records, by node.
type records map[*graph.Node]*running

// out is n's output collection; nil for a sink or a node not kept.
func (rs records) out(n *graph.Node) *collection {
	if rn := rs[n]; rn != nil {
		return rn.out
	}
	return nil
}

// NewRuntime prepares g for running.
func NewRuntime(g *graph.Graph, opts RunOptions) (*Runtime, error) {
	if err := checkRunnable(g); err != nil {
		return nil, err
	}
	g.Fingerprints() // GraphState reports them; a reload diffs them
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.DrainTimeout == 0 {
		opts.DrainTimeout = 5 * time.Second
	}
	r := &Runtime{g: g, opts: opts, nodes: records{}, taps: map[string]*tapHub{}, dec: newDecisions(g, opts.Logger)}
	r.reload.init(opts.Metrics)
	var sinks []*sink
	for _, n := range g.Nodes { // every node after its inputs
		var f *fanIn
		if n.FanIn() {
			f = r.newFanInLocked(n, g.Config)
			r.showFanIn(n, f)
		}
		if s := r.addLocked(n, f).sink; s != nil {
			sinks = append(sinks, s)
		}
	}
	// The sinks of the first graph free the start-up memory; a reload's
	// new sinks start over a steady heap and free nothing.
	mem := newStartupMemory(len(sinks))
	for _, s := range sinks {
		s.mem = mem
	}
	return r, nil
}

// synced reports the node's output synced, or for a sink the target
// written after its input synced.
func (rn *running) synced() bool {
	if rn.out != nil {
		return rn.out.isSynced()
	}
	return rn.sink.Started()
}

// checkRunnable refuses a graph that did not build wholly: NewRuntime and
// Reload run only built graphs.
func checkRunnable(g *graph.Graph) error {
	if g == nil {
		return errors.New("no graph")
	}
	for _, n := range g.Nodes {
		if n.Impl() == nil {
			return fmt.Errorf("%s: not built; validate the configuration first", n.Address)
		}
	}
	return nil
}

// addLocked creates n's record: its health, metrics, output collection
// or, for a sink, its reconcile loop over the union f (nil: its only
// input). n's inputs must be added first.
func (r *Runtime) addLocked(n *graph.Node, f *fanIn) *running {
	rn := &running{health: &health{since: time.Now()}, stats: r.opts.Metrics.statsFor(n.Address), fanIn: f}
	r.nodes[n] = rn
	if n.Kind != node.KindSink {
		rn.out = newCollection(r.opts.QueueLimit, rn.stats)
		rn.out.tap = r.tapPortLocked(n)
		if n.Kind == node.KindSource {
			rn.out.origin = &node.Origin{Source: n.Address}
		}
		return rn
	}
	rn.sink = r.newSinkLocked(n, rn)
	return rn
}

// healthOf is n's health, which a reload may add beside the running ones.
func (r *Runtime) healthOf(n *graph.Node) *health {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.nodes[n].health
}

func (r *Runtime) logger(n *graph.Node) *slog.Logger {
	return r.opts.Logger.With("node", n.Address)
}

// Run runs every node until ctx ends. A failing node is restarted with
// backoff and never stops the others. On cancel, sources stop first, then
// in-flight deltas drain to the sinks (bounded by DrainTimeout), then the
// rest stops. Sinks keep their targets' state.
func (r *Runtime) Run(ctx context.Context) error {
	srcCtx, stopSources := context.WithCancel(ctx)
	defer stopSources()
	restCtx, stopRest := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRest()
	r.configLoaded()
	r.mu.Lock()
	r.srcCtx, r.restCtx = srcCtx, restCtx
	for _, n := range r.g.Nodes {
		rn := r.nodes[n]
		if rn.fanIn != nil {
			r.startFanInLocked(rn.fanIn)
		}
		rn.task = r.startLocked(n)
	}
	r.mu.Unlock()
	close(r.reload.started)
	<-ctx.Done()
	r.reload.close() // waits for a reload under way; none starts after
	stopSources()
	r.wait(node.KindSource)
	r.drain(r.opts.DrainTimeout)
	stopRest()
	r.wait("")
	r.opts.Logger.Info("stopped")
	return nil
}

// task is one supervised node goroutine.
type task struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (t *task) stop() {
	t.cancel()
	<-t.done
}

// startTask runs fn in a goroutine of its own with a child of parent.
func startTask(parent context.Context, fn func(context.Context)) *task {
	ctx, cancel := context.WithCancel(parent)
	t := &task{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		fn(ctx)
	}()
	return t
}

// startLocked runs n under supervision in a context of its own, a child of
// the sources' or of the other nodes' context.
func (r *Runtime) startLocked(n *graph.Node) *task {
	parent := r.restCtx
	if n.Kind == node.KindSource {
		parent = r.srcCtx
	}
	return startTask(parent, func(ctx context.Context) { r.supervise(ctx, n) })
}

// wait waits for the tasks of the given kind ("" for all, the unions'
// goroutines included) to end.
func (r *Runtime) wait(kind node.Kind) {
	r.mu.RLock()
	var ts []*task
	for n, rn := range r.nodes {
		if rn.task != nil && (kind == "" || n.Kind == kind) {
			ts = append(ts, rn.task)
		}
		if kind == "" && rn.fanIn != nil && rn.fanIn.task != nil {
			ts = append(ts, rn.fanIn.task)
		}
	}
	r.mu.RUnlock()
	for _, t := range ts {
		<-t.done
	}
}

// drain waits until no subscription holds deltas and every started sink
// is idle. A sink still in its first write is not waited for: it stops
// when its context ends, so a signal during start-up is honoured at once.
func (r *Runtime) drain(limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if r.quiet() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.opts.Logger.Warn("shutdown drain timed out", "duration", limit)
}

func (r *Runtime) quiet() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, c := range r.collections() {
		c.mu.Lock()
		busy := slices.ContainsFunc(c.subs, (*subscription).waiting)
		c.mu.Unlock()
		if busy {
			return false
		}
	}
	for _, rn := range r.nodes {
		if s := rn.sink; s != nil && !s.Idle() && s.Started() {
			return false
		}
	}
	return true
}

// supervise runs n until ctx ends, restarting it with backoff when it fails.
func (r *Runtime) supervise(ctx context.Context, n *graph.Node) {
	log := r.logger(n)
	h := r.healthOf(n)
	attempt := 0
	for {
		started := time.Now()
		err := r.runOnce(ctx, n)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("stopped without error before shutdown")
		}
		if time.Since(started) > time.Minute {
			attempt = 0
		}
		wait := backoff.Delay(attempt)
		attempt++
		h.mu.Lock()
		h.restarts++
		h.mu.Unlock()
		if m := r.opts.Metrics; m != nil {
			m.restarts.WithLabelValues(n.Address).Inc()
		}
		h.set(false, node.Down, err.Error())
		log.Warn("node failed; restarting", "err", err, "duration", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		h.set(false, node.Pending, "restarting")
	}
}

func (r *Runtime) runOnce(ctx context.Context, n *graph.Node) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: panic: %v", n.Address, p)
			r.logger(n).Error("node panicked", "err", err, "stack", string(debug.Stack()))
		}
	}()
	env := r.env(n)
	r.mu.RLock()
	rn, in := r.nodes[n], r.inputOf(n)
	r.mu.RUnlock()
	switch {
	case n.Source != nil:
		if r.sandbox {
			<-ctx.Done() // the config test feeds the collection
			return nil
		}
		return n.Source.Run(ctx, env, rn.out)
	case n.Transform != nil:
		sub := in.subscribe(rn.stats)
		defer in.unsubscribe(sub)
		_, sub.packed = n.Transform.(node.PackedInput)
		return n.Transform.Run(ctx, env, sub, rn.out)
	case n.Sink != nil:
		return rn.sink.run(ctx, env, r.dec)
	}
	return fmt.Errorf("%s: not built", n.Address)
}

// Readiness reports whether every source has synced and every sink is
// healthy, with a row per node.
func (r *Runtime) Readiness() Readiness {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := Readiness{Ready: true, LastReload: r.reload.status()}
	if r.opts.Leader != nil {
		out.Leader = r.opts.Leader.Status()
	}
	for _, n := range r.g.Nodes {
		rn := r.nodes[n]
		synced := rn.synced()
		st := rn.health.status(n.Address, synced)
		if n.Kind != node.KindSink && synced && st.State == node.Pending.String() && st.Detail == "" {
			// A node that reports no health of its own is healthy once its
			// output is synced.
			st.State = node.Healthy.String()
		}
		switch n.Kind {
		case node.KindSource:
			st.Ready = synced && st.State != node.Down.String()
		case node.KindSink:
			// Ready once the target holds the synced input: a probe or an
			// agent waiting for /readyz must not find a half-written target.
			// A standby (not leading) writes nothing and is ready to take over.
			st.Ready = st.State == node.Healthy.String() && (synced || rn.sink.Standby())
		default:
			st.Ready = st.State != node.Down.String()
		}
		out.Ready = out.Ready && st.Ready
		out.Nodes = append(out.Nodes, st)
	}
	sort.Slice(out.Nodes, func(i, j int) bool { return out.Nodes[i].Address < out.Nodes[j].Address })
	return out
}

// GraphState returns the running graph's state. A reload swaps the graph
// and adds to its maps under r.mu: take what is needed under the lock, and
// ask the collections and nodes without it.
func (r *Runtime) GraphState() graph.GraphState {
	var out graph.GraphState
	r.mu.RLock()
	nodes, recs := r.g.Nodes, maps.Clone(r.nodes)
	r.mu.RUnlock()
	for _, n := range nodes {
		ns := n.State()
		if rn := recs[n]; rn != nil {
			ns.Synced = rn.synced()
			if rn.out != nil {
				ns.Records = rn.out.len()
			}
		}
		if p, ok := n.Impl().(node.PendingLister); ok {
			ns.Pending = p.Pending()
		}
		out.Nodes = append(out.Nodes, ns)
	}
	sort.Slice(out.Nodes, func(i, j int) bool { return out.Nodes[i].Address < out.Nodes[j].Address })
	return out
}

// health holds one node's health as reported by the node itself and by the
// engine (the sink loop, the supervisor). The worse of the two is shown.
type health struct {
	mu       sync.Mutex
	own      node.State
	ownMsg   string
	eng      node.State
	engMsg   string
	since    time.Time
	restarts int
}

// nodeHealth is the node-facing half, handed out as node.Env.Health.
type nodeHealth struct{ h *health }

func (n nodeHealth) Set(s node.State, detail string) { n.h.set(true, s, detail) }

func (h *health) set(own bool, s node.State, detail string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	before, _ := h.effectiveLocked()
	if own {
		h.own, h.ownMsg = s, detail
	} else {
		h.eng, h.engMsg = s, detail
	}
	if after, _ := h.effectiveLocked(); after != before {
		h.since = time.Now()
	}
}

func (h *health) effectiveLocked() (node.State, string) {
	if h.eng > h.own || (h.eng == h.own && h.engMsg != "" && h.ownMsg == "") { // worse, or as bad and saying why
		return h.eng, h.engMsg
	}
	return h.own, h.ownMsg
}

// NodeStatus is one node's row in /readyz and `pipeline run` logs.
type NodeStatus struct {
	Address  string    `json:"address"`
	State    string    `json:"state"`
	Detail   string    `json:"detail,omitempty"`
	Synced   bool      `json:"synced"`
	Since    time.Time `json:"since,omitempty"`
	Restarts int       `json:"restarts,omitempty"`
	Ready    bool      `json:"ready"`
}

// Readiness is the body of /readyz.
type Readiness struct {
	Ready bool         `json:"ready"`
	Nodes []NodeStatus `json:"nodes"`
	// Leader is present with leader election: a follower is ready too
	// (its sources are synced), its sinks wait in standby.
	Leader *LeaderStatus `json:"leader_election,omitempty"`
	// LastReload is present once a reload was tried: a failed one shows
	// its error here while the running graph keeps serving.
	LastReload *ReloadStatus `json:"last_reload,omitempty"`
}

func (h *health) status(addr string, synced bool) NodeStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, msg := h.effectiveLocked()
	return NodeStatus{Address: addr, State: s.String(), Detail: msg, Synced: synced, Since: h.since, Restarts: h.restarts}
}
