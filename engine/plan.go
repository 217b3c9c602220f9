package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/reconcile"
)

// PlanOptions configure Plan.
type PlanOptions struct {
	Logger *slog.Logger
	// Wait bounds the wait for the sources' initial sync; 2m when 0.
	Wait time.Duration
	// Progress, when set, receives every source's state about every
	// 200ms while plan waits for the sources, and once when they synced.
	Progress func([]SourceState)
}

// SourceState is how far one source got in its initial sync.
type SourceState struct {
	Address string `json:"address"`
	Records int    `json:"records"`
	Synced  bool   `json:"synced"`
}

// PlanResult is what run would do to every sink's target now.
type PlanResult struct {
	Sources  []SourceState
	Sinks    []SinkPlan
	Warnings []PlanWarning
}

// SinkPlan is one sink's diff: its desired state (the input after its
// initial sync) against what its target holds.
type SinkPlan struct {
	Address string
	Type    string
	Target  node.TargetInfo
	// AppendOnly targets cannot be read: Changes lists what the initial
	// sync would append.
	AppendOnly bool
	Prune      bool
	// Held is what the target holds now, Desired what the input wants,
	// Projected what the target holds once run applied Changes.
	Held, Desired, Projected int
	// Kept counts keys held but not desired that stay because prune is
	// false.
	Kept    int
	Changes []PlannedChange
	Skipped []SkippedRecord
	// Conflicts are target keys that input keys with different values map
	// to (on_conflict = "error"): Err says which value the key keeps.
	Conflicts []SkippedRecord
	// Pending are the deletions transforms upstream (grace_period) hold
	// back when the plan was taken, with when each would reach the sink.
	Pending []node.PendingDeletion
	// File is set for a target that renders one file (node.FilePlanner):
	// Changes then holds one change of the file, and File its diff.
	File *node.FilePlan
	// DeletesHeld counts the deletes the deletion brake would hold
	// (max_deletes), each marked in Changes (PlannedChange.Held), and
	// Brake says why; Projected counts them as still held.
	DeletesHeld int
	Brake       string
}

// PlannedChange is one change of a plan with what a reader needs: the
// values as the target shows them and the input keys that want the key.
type PlannedChange struct {
	reconcile.Change
	// Before and After are the values as the target's Describer shows
	// them; empty when the target has no Describer (render the Change's
	// values) or for the side that does not exist.
	Before, After string
	// Origins name the source objects of the input records wanting the
	// key ("pod shop/web-1"; two input records may map to one target key),
	// sorted, from the records' provenance (node.Origin); empty for a
	// delete.
	Origins []string
	// Sensitive is set when a value of the change is secret: Before,
	// After and the entries' values then hold schema.Mask.
	Sensitive bool
	// Detail is what the target's backend says the change would do (a
	// node.DryRunner's lines), and DryRunError why it would fail.
	Detail      []string
	DryRunError string
	// Refused says why run would refuse this creation: what it would
	// write over exists and is not the sink's (node.DryRun.Refused).
	// Adopts says why what it takes over with adopt = true is not the
	// sink's now.
	Refused, Adopts string
	// Held is set on a delete the deletion brake would hold: run would
	// not apply it (SinkPlan.Brake says why).
	Held bool
}

// SkippedRecord is an input record the target cannot encode: run skips it.
type SkippedRecord struct {
	Key node.Key
	Err string
}

// PlanWarning is something run would do that deserves a look before
// running: a target filling up, a prune of foreign keys, an empty source.
type PlanWarning struct {
	Address string
	Message string
}

// Phases a plan fails in, named in its error.
const (
	PhaseSync   = "sync sources"
	PhaseOpen   = "open target"
	PhaseRead   = "read target"
	capacityPct = 80
)

// Counts returns the number of creates, updates and deletes of p in
// targets that hold state; what append-only targets would receive is
// counted by Emits.
func (p *PlanResult) Counts() (add, change, remove int) {
	for _, s := range p.Sinks {
		if s.AppendOnly {
			continue
		}
		for _, c := range s.Changes {
			switch c.Action {
			case reconcile.Create:
				add++
			case reconcile.Update:
				change++
			case reconcile.Delete:
				remove++ // a held delete too: the target differs from the input
			}
		}
	}
	return add, change, remove
}

// Emits returns the number of messages, lines or events append-only
// targets would receive from the initial sync.
func (p *PlanResult) Emits() int {
	n := 0
	for _, s := range p.Sinks {
		if s.AppendOnly {
			n += len(s.Changes)
		}
	}
	return n
}

// Plan computes what run would do, writing nothing: it runs the sources and
// transforms of g until every sink's input has synced, then opens every
// sink's target with ModePlan, reads it and diffs it with reconcile.Diff,
// the comparison run uses. No sink loop runs, so nothing is written.
func Plan(ctx context.Context, g *Graph, opts PlanOptions) (*PlanResult, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Wait == 0 {
		opts.Wait = 2 * time.Minute
	}
	r, err := NewRuntime(g, RunOptions{Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	r.oneShot = true
	inputs, sources, err := r.syncUpstream(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", PhaseSync, err)
	}
	res := &PlanResult{Sources: sources}
	for _, s := range sources {
		if s.Synced && s.Records == 0 {
			res.Warnings = append(res.Warnings, PlanWarning{Address: s.Address, Message: r.emptySourceWarning(s.Address)})
		}
	}
	for _, n := range g.Nodes {
		if n.Kind != node.KindSink {
			continue
		}
		sp, err := r.planSink(ctx, n, inputs[n])
		if err != nil {
			return nil, err
		}
		res.Sinks = append(res.Sinks, *sp)
		res.Warnings = append(res.Warnings, sinkWarnings(sp)...)
	}
	sort.Slice(res.Sinks, func(i, j int) bool { return res.Sinks[i].Address < res.Sinks[j].Address })
	sort.SliceStable(res.Warnings, func(i, j int) bool { return res.Warnings[i].Address < res.Warnings[j].Address })
	return res, nil
}

// emptySourceWarning is plan's warning for a source that synced with no
// records. A source that read input and skipped all of it says so in its
// health (degraded), and that is the warning: it matched something.
func (r *Runtime) emptySourceWarning(addr string) string {
	r.mu.RLock()
	h := r.healths[r.g.Node(addr)]
	r.mu.RUnlock()
	if h != nil {
		if st := h.status(addr, true); st.State == node.Degraded.String() && st.Detail != "" {
			return "synced with no records: " + st.Detail
		}
	}
	return "matched nothing: the source synced with no records"
}

// syncUpstream runs every source and transform once (a failure fails the
// plan: there is no one to retry for) until the input of every sink has
// synced, then stops them and returns the inputs' snapshots.
func (r *Runtime) syncUpstream(ctx context.Context, opts PlanOptions) (map[*Node][]node.Record, []SourceState, error) {
	ctx, cancel := context.WithTimeout(ctx, opts.Wait)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, len(r.g.Nodes))
	for _, n := range r.g.Nodes {
		if n.Kind == node.KindSink {
			continue
		}
		wg.Go(func() {
			err := r.runOnce(runCtx, n)
			if runCtx.Err() == nil {
				if err == nil {
					err = fmt.Errorf("%s: stopped before its input synced", n.Address)
				}
				errs <- err
			}
		})
	}
	for _, f := range r.fanins { // under Run, each has a task instead (startFanInLocked)
		wg.Go(func() { f.run(runCtx) })
	}
	defer func() {
		stop()
		wg.Wait()
	}()
	// Sync is polled often (it ends the wait), progress drawn less often.
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var drawn time.Time
	for {
		states, done := r.sourceStates()
		if done {
			if opts.Progress != nil {
				opts.Progress(states)
			}
			return r.sinkInputs(), states, nil
		}
		if opts.Progress != nil && time.Since(drawn) >= 200*time.Millisecond {
			opts.Progress(states)
			drawn = time.Now()
		}
		select {
		case err := <-errs:
			return nil, nil, err
		case <-ctx.Done():
			var waiting []string
			for _, n := range r.g.Nodes {
				if n.Kind != node.KindSource || r.outs[n].isSynced() {
					continue
				}
				// What the source last said of itself tells a user what to fix.
				if st := r.healths[n].status(n.Address, false); st.Detail != "" {
					waiting = append(waiting, fmt.Sprintf("%s (%s: %s)", n.Address, st.State, st.Detail))
				} else {
					waiting = append(waiting, n.Address)
				}
			}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, nil, fmt.Errorf("not synced after %s: %s", opts.Wait, strings.Join(waiting, ", "))
			}
			return nil, nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// sourceStates returns every source's progress and whether every sink's
// input has synced.
func (r *Runtime) sourceStates() ([]SourceState, bool) {
	// Synced first, counts after: once synced, a count read later is the
	// synced state's (or newer), never an earlier, partial one.
	done := !slices.ContainsFunc(r.g.Nodes, func(n *Node) bool { return n.Kind == node.KindSink && !r.inputOf(n).isSynced() })
	var out []SourceState
	for _, n := range r.g.Nodes {
		if n.Kind == node.KindSource {
			c := r.outs[n]
			c.mu.Lock()
			out = append(out, SourceState{Address: n.Address, Records: len(c.state), Synced: c.synced})
			c.mu.Unlock()
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out, done
}

// sinkInputs returns the snapshot each sink consumes, by sink.
func (r *Runtime) sinkInputs() map[*Node][]node.Record {
	out := map[*Node][]node.Record{}
	for _, n := range r.g.Nodes {
		if n.Kind == node.KindSink {
			recs, _, _ := r.inputOf(n).snapshot()
			out[n] = recs
		}
	}
	return out
}
