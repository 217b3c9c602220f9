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

	// mu guards the graph and the per-node maps below, which Reload
	// changes while nodes run. They are keyed by *Node, so the nodes of a
	// reload being staged live beside the running ones.
	mu      sync.RWMutex
	g       *graph.Graph
	outs    map[*graph.Node]*collection
	healths map[*graph.Node]*health
	stats   map[*graph.Node]*nodeStats
	sinks   map[*graph.Node]*sink
	fanins  map[*graph.Node]*fanIn // unions of nodes with several inputs (fanin.go)
	tasks   map[*graph.Node]*task
	srcCtx  context.Context    // parent of the sources' contexts, set by Run
	restCtx context.Context    // parent of the other nodes' contexts
	reload  reloadState        // reload.go
	taps    map[string]*tapHub // by address (tap.go)
	clock   node.Clock         // nil: the wall clock; a config test's virtual clock
	sandbox bool               // a config test drives the sources (sandbox.go)
	oneShot bool               // plan: nodes run until synced (node.Env.OneShot)
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
	r := &Runtime{g: g, opts: opts, outs: map[*graph.Node]*collection{}, healths: map[*graph.Node]*health{},
		stats: map[*graph.Node]*nodeStats{}, sinks: map[*graph.Node]*sink{}, tasks: map[*graph.Node]*task{},
		taps: map[string]*tapHub{}, dec: newDecisions(g, opts.Logger)}
	r.reload.init(opts.Metrics)
	for _, n := range g.Nodes {
		if n.Kind != node.KindSink {
			r.addLocked(n)
		}
	}
	r.newFanIns()
	for _, n := range g.Nodes {
		if n.Kind == node.KindSink {
			r.addLocked(n)
		}
	}
	// The sinks of the first graph free the start-up memory; a reload's
	// new sinks start over a steady heap and free nothing.
	mem := newStartupMemory(len(r.sinks))
	for _, sl := range r.sinks {
		sl.mem = mem
	}
	return r, nil
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

// addLocked creates n's health, metrics, output collection and, for a
// sink, its reconcile loop. n's input must be added first.
func (r *Runtime) addLocked(n *graph.Node) {
	r.stats[n] = r.opts.Metrics.statsFor(n.Address)
	r.healths[n] = &health{since: time.Now()}
	if n.Kind != node.KindSink {
		r.outs[n] = newCollection(r.opts.QueueLimit, r.stats[n])
		r.outs[n].tap = r.tapPortLocked(n)
		if n.Kind == node.KindSource {
			r.outs[n].origin = &node.Origin{Source: n.Address}
		}
		return
	}
	r.sinks[n] = r.newSinkLocked(n)
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
	for _, f := range r.fanins {
		r.startFanInLocked(f)
	}
	for _, n := range r.g.Nodes {
		r.tasks[n] = r.startLocked(n)
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
	for n, t := range r.tasks {
		if kind == "" || n.Kind == kind {
			ts = append(ts, t)
		}
	}
	for _, f := range r.fanins {
		if kind == "" && f.task != nil {
			ts = append(ts, f.task)
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
	for _, s := range r.sinks {
		if !s.Idle() && s.Started() {
			return false
		}
	}
	return true
}

// supervise runs n until ctx ends, restarting it with backoff when it fails.
func (r *Runtime) supervise(ctx context.Context, n *graph.Node) {
	log := r.logger(n)
	r.mu.RLock()
	h := r.healths[n]
	r.mu.RUnlock()
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
	out, in, stats, sl := r.outs[n], r.inputOf(n), r.stats[n], r.sinks[n]
	r.mu.RUnlock()
	switch {
	case n.Source != nil:
		if r.sandbox {
			<-ctx.Done() // the config test feeds the collection
			return nil
		}
		return n.Source.Run(ctx, env, out)
	case n.Transform != nil:
		sub := in.subscribe(stats)
		defer in.unsubscribe(sub)
		_, sub.packed = n.Transform.(node.PackedInput)
		return n.Transform.Run(ctx, env, sub, out)
	case n.Sink != nil:
		return sl.run(ctx, env, r.dec)
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
		var synced bool
		if c, ok := r.outs[n]; ok {
			synced = c.isSynced()
		} else if s, ok := r.sinks[n]; ok {
			synced = s.Started() // the target holds the synced input
		}
		st := r.healths[n].status(n.Address, synced)
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
			st.Ready = st.State == node.Healthy.String() && (synced || (r.sinks[n] != nil && r.sinks[n].Standby()))
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
	nodes, outs, sinks := r.g.Nodes, maps.Clone(r.outs), maps.Clone(r.sinks)
	r.mu.RUnlock()
	for _, n := range nodes {
		ns := n.State()
		if c := outs[n]; c != nil {
			ns.Records, ns.Synced = c.len(), c.isSynced()
		} else if s := sinks[n]; s != nil {
			ns.Synced = s.Started()
		}
		if p, ok := n.Impl().(node.PendingLister); ok {
			ns.Pending = p.Pending()
		}
		out.Nodes = append(out.Nodes, ns)
	}
	sort.Slice(out.Nodes, func(i, j int) bool { return out.Nodes[i].Address < out.Nodes[j].Address })
	return out
}
