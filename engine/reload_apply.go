package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// staging holds the new parts of a reload until the swap.
type staging struct {
	nodes  []*graph.Node
	cfg    *schema.Config // of the new graph: the new unions' merge reads it
	tasks  map[*graph.Node]*task
	opened map[*graph.Node]node.Target
	// handover holds the new sinks that take over a target a running
	// sink holds (a rebuilt sink, or one on a retired sink's pin): an
	// exclusive resource such as a pin lock opens only once its holder
	// stopped, so these open after the retired sinks stop.
	handover map[*graph.Node]bool
	// unions holds, by new node, the running union it takes over (see
	// sameUnion): kept running, never stopped by this reload.
	unions map[*graph.Node]*fanIn
}

// apply runs the reload: merge, stage, swap; or tear the stage down.
func (r *Runtime) apply(ctx context.Context, cur, g *graph.Graph, d graph.GraphDiff, timeout time.Duration) error {
	merged := graph.New(g.Config)
	var fresh []*graph.Node
	for _, n := range g.Nodes {
		use := n
		if a, _ := d.Action(n.Address); a == graph.Kept {
			use = cur.Node(n.Address) // the running instance, with its state
			use.OnRemove = n.OnRemove // read by a later removal only; see inPlaceAttrs
		} else {
			fresh = append(fresh, n)
			for i, in := range n.Inputs {
				n.Inputs[i] = merged.Node(in.Address) // a kept input is the running one
			}
		}
		merged.Add(use)
	}
	var retired []*graph.Node // running nodes that stop: removed or rebuilt
	for _, o := range cur.Nodes {
		if a, _ := d.Action(o.Address); a != graph.Kept {
			retired = append(retired, o)
		}
	}
	st := &staging{nodes: fresh, cfg: g.Config, tasks: map[*graph.Node]*task{}, opened: map[*graph.Node]node.Target{},
		handover: map[*graph.Node]bool{}, unions: map[*graph.Node]*fanIn{}}
	retiredClaims := claimSet(retired)
	r.mu.RLock()
	for _, n := range fresh {
		if o := cur.Node(n.Address); o != nil && n.FanIn() && sameUnion(o, n) {
			st.unions[n] = r.nodes[o].fanIn
		}
		if a, _ := d.Action(n.Address); n.Kind == node.KindSink && (a == graph.Rebuilt || overlaps(n, retiredClaims)) {
			st.handover[n] = true
		}
	}
	r.mu.RUnlock()
	// One deadline bounds the whole stage: opening the new targets,
	// waiting for them to be ready and for the new outputs to sync.
	stage, cancel := context.WithTimeoutCause(ctx, timeout, errStageTimeout)
	defer cancel()
	if err := r.prepare(stage, st, timeout); err != nil {
		r.unstage(st)
		return err
	}
	stopped := r.stopSinks(retired)
	if err := r.openSinks(stage, st, true, timeout); err != nil {
		r.unstage(st)
		r.mu.Lock()
		for _, o := range stopped {
			r.nodes[o].task = r.startLocked(o) // reads its target and goes on: no churn
		}
		r.mu.Unlock()
		return err
	}
	r.swap(ctx, merged, st, retired, d)
	return nil
}

// kept returns the set of the unions a reload hands over.
func kept(unions map[*graph.Node]*fanIn) map[*fanIn]bool {
	out := make(map[*fanIn]bool, len(unions))
	for _, f := range unions {
		out[f] = true
	}
	return out
}

// claimSet returns the claims of the sinks among nodes.
func claimSet(nodes []*graph.Node) map[string]bool {
	out := map[string]bool{}
	for _, n := range nodes {
		if c, ok := n.Sink.(graph.Claimer); ok {
			for _, cl := range c.Claims() {
				out[cl.What+"\x00"+cl.Name] = true
			}
		}
	}
	return out
}

// overlaps reports whether n claims one of claims (see claimSet).
func overlaps(n *graph.Node, claims map[string]bool) bool {
	c, ok := n.Impl().(graph.Claimer)
	return ok && slices.ContainsFunc(c.Claims(), func(cl node.Claim) bool { return claims[cl.What+"\x00"+cl.Name] })
}

// errStageTimeout ends a reload's stage that took longer than its timeout.
var errStageTimeout = errors.New("reload timeout")

// openSinks opens the targets of the new sinks, the handover ones or the
// others, and waits until each can write (node.Readier). A target that
// fails stays in st.opened, for unstage to close.
func (r *Runtime) openSinks(ctx context.Context, st *staging, handover bool, timeout time.Duration) error {
	for _, n := range st.nodes {
		if n.Kind != node.KindSink || st.handover[n] != handover {
			continue
		}
		env := r.env(n)
		env.ConfigGeneration++ // the generation this reload loads
		t, err := n.Sink.Open(ctx, env, node.ModeRun)
		if err != nil {
			return fmt.Errorf("%s: open target: %w", n.Address, stageErr(ctx, err, timeout))
		}
		st.opened[n] = t
		if rd, ok := t.(node.Readier); ok {
			if err := rd.Ready(ctx); err != nil {
				return fmt.Errorf("%s: target not ready: %w", n.Address, stageErr(ctx, err, timeout))
			}
		}
	}
	return nil
}

// stageErr adds to err, when the stage's deadline passed, that it did.
func stageErr(ctx context.Context, err error, timeout time.Duration) error {
	if errors.Is(context.Cause(ctx), errStageTimeout) {
		return fmt.Errorf("not within the reload timeout (%s): %w", timeout, err)
	}
	return err
}

// stopSinks stops the running sinks among nodes and returns them.
func (r *Runtime) stopSinks(nodes []*graph.Node) []*graph.Node {
	var out []*graph.Node
	for _, o := range nodes {
		r.mu.RLock()
		t := r.nodes[o].task
		r.mu.RUnlock()
		if t != nil && o.Kind == node.KindSink {
			t.stop()
			out = append(out, o)
		}
	}
	return out
}

// prepare starts the new sources, unions and transforms and opens the new
// sinks' targets, beside the running graph, and waits for the new outputs
// to sync.
func (r *Runtime) prepare(ctx context.Context, st *staging, timeout time.Duration) error {
	r.mu.Lock()
	for _, n := range st.nodes {
		f := st.unions[n] // the union before its consumer, which reads from it
		if f == nil && n.FanIn() {
			f = r.newFanInLocked(n, st.cfg)
		}
		r.addLocked(n, f).staged = true
	}
	r.mu.Unlock()
	if err := r.openSinks(ctx, st, false, timeout); err != nil {
		return err
	}
	r.mu.Lock()
	for _, n := range st.nodes {
		if f := r.nodes[n].fanIn; f != nil && st.unions[n] == nil {
			r.startFanInLocked(f)
		}
		if n.Kind != node.KindSink {
			st.tasks[n] = r.startLocked(n)
		}
	}
	r.mu.Unlock()
	return r.waitSynced(ctx, st, timeout)
}

// waitSynced waits until every new output is synced, or until ctx (the
// stage, bounded by the reload timeout) ends. A new node that fails (its
// health goes Down) fails the reload at once.
func (r *Runtime) waitSynced(ctx context.Context, st *staging, timeout time.Duration) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		var waiting *graph.Node
		r.mu.RLock()
		for _, n := range st.nodes {
			if f := r.nodes[n].fanIn; waiting == nil && f != nil && !f.out.isSynced() {
				waiting = n
			}
			if n.Kind == node.KindSink {
				continue
			}
			if s := r.nodes[n].health.status(n.Address, false); s.State == node.Down.String() {
				r.mu.RUnlock()
				return fmt.Errorf("%s: failed to start: %s", n.Address, s.Detail)
			}
			if waiting == nil && !r.nodes[n].out.isSynced() {
				waiting = n
			}
		}
		r.mu.RUnlock()
		if waiting == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), errStageTimeout) {
				return fmt.Errorf("%s: not synced within %s", waiting.Address, timeout)
			}
			return fmt.Errorf("%s: not synced when the reload was cancelled: %w", waiting.Address, ctx.Err())
		case <-tick.C:
		}
	}
}

// unstage tears down every new part; the running graph never saw them.
func (r *Runtime) unstage(st *staging) {
	for _, t := range st.tasks {
		t.stop()
	}
	r.stopFanIns(st.nodes, kept(st.unions))
	for n, t := range st.opened {
		if err := t.Close(); err != nil {
			r.logger(n).Warn("close target failed", "err", err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range st.nodes {
		r.removeLocked(n)
	}
}

// swap installs the merged graph once the replaced sinks stopped (so no
// two loops write one target at once) and starts the new sinks; the
// replaced sources and transforms stop last, once nothing consumes them.
func (r *Runtime) swap(ctx context.Context, merged *graph.Graph, st *staging, retired []*graph.Node, d graph.GraphDiff) {
	r.mu.Lock()
	var oldRest []*task
	for _, o := range retired {
		if t := r.nodes[o].task; t != nil && o.Kind != node.KindSink {
			oldRest = append(oldRest, t)
		}
	}
	r.g = merged
	for _, o := range retired {
		if r.nodes[o].fanIn != nil {
			r.showFanIn(o, nil) // unless the new node at its address shows its own, below
		}
	}
	for _, n := range st.nodes {
		rn := r.nodes[n]
		if rn.fanIn != nil {
			r.showFanIn(n, rn.fanIn)
		}
		if rn.reg != nil && r.opts.Metrics != nil {
			r.opts.Metrics.nodeGatherer.set(n.Address, rn.reg)
		}
		if n.Kind != node.KindSink {
			rn.staged, rn.task = false, st.tasks[n]
			continue
		}
		rn.sink.opened = st.opened[n]
		rn.task = r.startLocked(n)
	}
	r.dec.setGates(merged)
	r.setTapsLive(st.nodes, retired)
	r.mu.Unlock()
	for _, t := range oldRest {
		t.stop()
	}
	r.stopFanIns(retired, kept(st.unions)) // once their consumers stopped
	r.mu.Lock()
	var cleanups []*sink
	for _, o := range retired {
		if a, _ := d.Action(o.Address); a == graph.Removed {
			if o.Kind == node.KindSink && o.OnRemove == node.OnRemoveClean {
				cleanups = append(cleanups, r.nodes[o].sink)
			}
			if r.opts.Metrics != nil {
				r.opts.Metrics.nodeGatherer.set(o.Address, nil)
				r.opts.Metrics.forget(o.Address)
			}
		}
		r.removeLocked(o)
	}
	r.mu.Unlock()
	for _, s := range cleanups {
		r.clean(ctx, s)
	}
}

// removeLocked forgets a node that no longer runs, and the tap hub of its
// address when the running graph has no node there.
func (r *Runtime) removeLocked(n *graph.Node) {
	delete(r.nodes, n)
	r.forgetTapLocked(n.Address)
}

// clean deletes, for a removed sink with on_remove = "clean", the entries
// it owns: everything its target holds when it prunes, else what it wrote.
// A follower of leader election cleans nothing: the leader decides.
func (r *Runtime) clean(ctx context.Context, s *sink) {
	log := r.logger(s.n)
	if l := r.opts.Leader; l != nil && !l.Leading() {
		log.Info("removed sink not cleaned: not the leader")
		return
	}
	env := node.Env{Logger: log, Health: nodeHealth{&health{}}, Address: s.n.Address, Metrics: discardRegisterer{}, Decisions: r.dec.Decide}
	t, err := s.n.Sink.Open(ctx, env, node.ModeRun)
	if err != nil {
		log.Error("removed sink not cleaned: open target", "err", err)
		return
	}
	defer func() {
		if err := t.Close(); err != nil {
			log.Warn("close target failed", "err", err)
		}
	}()
	entries, err := t.Actual(ctx)
	if errors.Is(err, node.ErrNoActualState) {
		return // append-only: nothing to take back
	}
	if err != nil {
		log.Error("removed sink not cleaned: read target", "err", err)
		return
	}
	var dels []node.Entry
	for _, e := range entries {
		if s.n.Prune || s.Wrote(e.Key) {
			dels = append(dels, e)
		}
	}
	t.Delete(ctx, dels)
	failed := 0
	for _, e := range dels {
		if e.Err != nil {
			failed++
		}
	}
	log.Info("removed sink cleaned", "count", len(dels)-failed, "err_count", failed)
	if failed > 0 {
		log.Error("removed sink not wholly cleaned", "count", failed)
	}
}

// env is the node.Env of a node run. A node of a reload being staged
// registers its metrics on a registry of its own, which the swap publishes;
// the first run of a staged sink reuses the registry its target opened with.
func (r *Runtime) env(n *graph.Node) node.Env {
	env := node.Env{Logger: r.logger(n), Health: nodeHealth{r.healthOf(n)}, Address: n.Address, Metrics: discardRegisterer{}, Decisions: r.dec.Decide, Clock: r.clock,
		ConfigGeneration: r.Generation(), OneShot: r.oneShot}
	m := r.opts.Metrics
	if m == nil {
		return env
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rn := r.nodes[n]
	switch {
	case rn.staged && r.g.Node(n.Address) != n:
		rn.reg = prometheus.NewRegistry()
	case rn.staged && rn.reg != nil:
		rn.staged = false
	default:
		env.Metrics = m.nodeRegistry(n.Address)
		return env
	}
	env.Metrics = prometheus.WrapRegistererWith(prometheus.Labels{"node": n.Address}, rn.reg)
	return env
}

// forget deletes the engine's series of a removed node.
func (m *Metrics) forget(addr string) {
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{m.records, m.queueDepth, m.overflows, m.deletesBraked,
		m.restarts, m.reconcile, m.latency, m.skipped, m.drift, m.deltas, m.writes} {
		v.DeletePartialMatch(prometheus.Labels{"node": addr})
	}
}
