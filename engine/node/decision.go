package node

import (
	"context"
	"time"
)

// DecisionKind names a decision of the engine or of a node.
type DecisionKind string

// The decisions emitted today. Later emitters (reload, leader election) add
// a kind here and make one Decide call.
const (
	DecisionConfigLoaded   DecisionKind = "config_loaded"
	DecisionSinkDegraded   DecisionKind = "sink_degraded"
	DecisionSinkRecovered  DecisionKind = "sink_recovered"
	DecisionDriftRepaired  DecisionKind = "drift_repaired"
	DecisionGraceDeletion  DecisionKind = "grace_deletion"
	DecisionReloadApplied  DecisionKind = "reload_applied"
	DecisionReloadRejected DecisionKind = "reload_rejected"
	// DecisionTargetReplaced: a sink replaced its target (a pinned map that
	// differed from its declaration, on_mismatch = "recreate"); a reload
	// lists it in its record's warnings.
	DecisionTargetReplaced DecisionKind = "target_replaced"
	// DecisionFileRendered: a target that renders one file (sink
	// "template") rendered it; Attrs say its digest and what its check
	// and reload did.
	DecisionFileRendered DecisionKind = "file_rendered"
	// An object a Kubernetes sink wrote or deleted, with the API server's
	// resourceVersion in Attrs["resource_version"].
	DecisionObjectApplied DecisionKind = "object_applied"
	DecisionObjectDeleted DecisionKind = "object_deleted"
	// DecisionDeletesBraked: a sink's deletion brake (max_deletes) holds
	// back deletes, Attrs["count"] of them ("deletes_held" to users);
	// DecisionDeletesReleased: it applied those it braked.
	DecisionDeletesBraked   DecisionKind = "deletes_held"
	DecisionDeletesReleased DecisionKind = "deletes_released"
)

// Decision is something the engine or a node decided that changed the world
// or the graph: it is what an audit trail records beside the changes. It
// never carries a secret: Detail and Attrs are shown as they are.
type Decision struct {
	Time time.Time // set by the engine when zero
	Kind DecisionKind
	// Node is the address the decision is about; empty for the whole graph.
	Node string
	// Detail is one sentence for humans.
	Detail string
	// Attrs holds bounded extra facts (a count, a file name, keys).
	Attrs map[string]string
	// ConfigGeneration is the config generation the decision was taken
	// under; set by the engine.
	ConfigGeneration uint64
}

// Decide hands d to the engine; it does nothing when the node runs without
// one (tests).
func (e Env) Decide(d Decision) {
	if e.Decisions != nil {
		e.Decisions(d)
	}
}

// DecisionRecorder is implemented by a Target that records decisions (an
// audit trail). The engine hands it every decision taken while its sink is
// open, in order, including those taken before it opened. An error is
// counted and logged by the recorder's own policy; the engine only logs it.
type DecisionRecorder interface {
	RecordDecision(d Decision) error
}

// Gate is implemented by a Sink that every other sink of the graph must wait
// for (audit with fail = "closed"): before writing, the engine waits until
// Wait returns nil or the channel it returned is closed.
type Gate interface {
	// Wait returns nil when writes may go ahead, or a channel closed when
	// they may. It never blocks.
	Wait() <-chan struct{}
}

// WaitGate blocks until g lets writes go ahead or ctx ends.
func WaitGate(ctx context.Context, g Gate) error {
	for {
		ch := g.Wait()
		if ch == nil {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
