package engine

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync/atomic"

	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/sinkloop"
)

// sink is a sink node as the runtime keeps it: its reconcile loop
// (engine/sinkloop) and what the engine hands each run of it.
type sink struct {
	*sinkloop.Loop
	n   *graph.Node
	in  *collection
	tap *tapPort // tap.go
	// opened is a target a reload opened before the swap, for the first run.
	opened node.Target
	// memOpen replaces the sink's own Open in a config test (sandbox.go).
	memOpen func(ctx context.Context, env node.Env) (node.Target, error)
	mem     *startupMemory // told when the loop first started
	stats   *nodeStats     // pipeline_node_records: the entries the target holds
}

// newSinkLocked returns sink node n's loop, wired to the runtime's
// health, decisions, leader election, tap and metrics.
func (r *Runtime) newSinkLocked(n *graph.Node, rn *running) *sink {
	s := &sink{n: n, in: r.inputOf(n), tap: r.tapPortLocked(n), stats: rn.stats}
	h, log, dec := rn.health, r.logger(n), r.dec
	m := r.opts.Metrics
	if m == nil {
		m = NewMetrics(discardRegisterer{}, "")
	}
	cfg := sinkloop.Config{Address: n.Address, Prune: n.Prune, OnConflict: n.OnConflict, Resync: n.Resync,
		MaxDeletes: n.MaxDeletes, Braked: func(braked int, detail string) { dec.noteBrake(n.Address, braked, detail) },
		Log: log, Metrics: m.sinkMetrics(n.Address),
		Health:  func(st node.State, detail string) { h.set(false, st, detail) },
		Settled: func() { dec.noteHealth(n.Address, h) },
		Gates: func(ctx context.Context, writes int) bool {
			return dec.waitGates(ctx, n.Address, h, log, writes)
		},
		Drift:   func(count int) { dec.noteDrift(n.Address, count) },
		Tapping: s.tap.active,
		Tapped:  s.tapped, // tap.go
		// s.mem is set once every sink of the first graph is made.
		Started: func() { s.mem.sinkStarted() },
		Actual: func(count int) {
			if s.stats != nil {
				s.stats.records.Set(float64(count))
			}
		},
	}
	if r.opts.Leader != nil {
		cfg.Leader = r.opts.Leader
	}
	s.Loop = sinkloop.New(cfg)
	return s
}

// run opens the target and runs the loop over it until ctx ends.
func (s *sink) run(ctx context.Context, env node.Env, dec *decisions) error {
	target, err := s.open(ctx, env)
	if err != nil {
		return fmt.Errorf("%s: open target: %w", s.n.Address, err)
	}
	defer func() {
		if err := target.Close(); err != nil {
			env.Logger.Warn("close target failed", "err", err)
		}
	}()
	dec.attach(s.n.Address, target)
	defer dec.detach(s.n.Address)
	sub := s.in.subscribe(s.stats)
	defer s.in.unsubscribe(sub)
	_, sub.packed = target.(node.PackedInput)
	return s.Run(ctx, target, sub)
}

// open returns the target a reload opened for this sink, once, or opens
// one: the sink's own, or a config test's.
func (s *sink) open(ctx context.Context, env node.Env) (node.Target, error) {
	if t := s.opened; t != nil {
		s.opened = nil
		return t, nil
	}
	if s.memOpen != nil {
		return s.memOpen(ctx, env)
	}
	return s.n.Sink.Open(ctx, env, node.ModeRun)
}

// sinkMetrics are the series of sink addr's loop.
func (m *Metrics) sinkMetrics(addr string) sinkloop.Metrics {
	return sinkloop.Metrics{
		WriteOK:   m.writes.WithLabelValues(addr, "upsert", "ok"),
		WriteErr:  m.writes.WithLabelValues(addr, "upsert", "error"),
		DelOK:     m.writes.WithLabelValues(addr, "delete", "ok"),
		DelErr:    m.writes.WithLabelValues(addr, "delete", "error"),
		Reconcile: m.reconcile.WithLabelValues(addr),
		Latency:   m.latency.WithLabelValues(addr),
		Skipped:   m.skipped.WithLabelValues(addr),
		Drift:     m.drift.WithLabelValues(addr),

		DeletesBraked: m.deletesBraked.WithLabelValues(addr),
	}
}

// startupMemory returns the memory of the initial sync to the operating
// system once every sink has written its first full state. Start-up
// allocates far more than the steady state holds (a LIST response is
// decoded, converted and diffed once, then dropped), and
// the Go runtime otherwise keeps those freed pages resident for minutes:
// on a DaemonSet that is the difference every node pays. It runs once per
// Runtime, in the goroutine of the last sink to start (one forced GC over
// a heap that is by then small).
type startupMemory struct {
	waiting atomic.Int64 // sinks that have not started yet
	free    func()       // debug.FreeOSMemory; a test counts calls
}

func newStartupMemory(sinks int) *startupMemory {
	m := &startupMemory{free: debug.FreeOSMemory}
	m.waiting.Store(int64(sinks))
	return m
}

// sinkStarted is called once by each sink loop after its first full
// reconcile over a synced input; a nil m (a reload's new sink) does nothing.
func (m *startupMemory) sinkStarted() {
	if m != nil && m.waiting.Add(-1) == 0 {
		m.free()
	}
}
