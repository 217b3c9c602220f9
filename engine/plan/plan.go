package plan

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/engine/graph"
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
	Progress func([]engine.SourceState)
}

// PlanResult is what run would do to every sink's target now.
type PlanResult struct {
	Sources  []engine.SourceState
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
	// Actual is what the target holds now, Desired what the input wants,
	// Projected what the target holds once run applied Changes.
	Actual, Desired, Projected int
	// Kept counts keys in the target but not desired that stay because prune is
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
	// File is set for a target that renders one file (node.Document):
	// Changes then holds one change of the file, and File its diff.
	File *node.FilePlan
	// DeletesBraked counts the deletes the deletion brake would hold
	// (max_deletes), each marked in Changes (PlannedChange.Braked), and
	// Brake says why; Projected counts them as still held.
	DeletesBraked int
	Brake         string
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
	// Braked is set on a delete the deletion brake would hold: run would
	// not apply it (SinkPlan.Brake says why).
	Braked bool
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
func Plan(ctx context.Context, g *graph.Graph, opts PlanOptions) (*PlanResult, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Wait == 0 {
		opts.Wait = 2 * time.Minute
	}
	r, err := engine.NewRuntime(g, engine.RunOptions{Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	sources, err := r.SyncOnce(ctx, opts.Wait, opts.Progress)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", PhaseSync, err)
	}
	res := &PlanResult{Sources: sources}
	for _, s := range sources {
		if s.Synced && s.Records == 0 {
			res.Warnings = append(res.Warnings, PlanWarning{Address: s.Address, Message: emptySourceWarning(r, s.Address)})
		}
	}
	for _, n := range g.Nodes {
		if n.Kind != node.KindSink {
			continue
		}
		sp, err := planSink(ctx, r, n)
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
func emptySourceWarning(r *engine.Runtime, addr string) string {
	if st, ok := r.Status(addr); ok && st.State == node.Degraded.String() && st.Detail != "" {
		return "synced with no records: " + st.Detail
	}
	return "matched nothing: the source synced with no records"
}
