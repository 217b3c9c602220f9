package sinkloop

import (
	"context"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
)

// Entry is a loop's view of one key, for explain.
type Entry struct {
	InputKey  node.Key // the key of the record the sink's input holds
	TargetKey node.Key // the key in the target (10.0.0.7 -> 10.0.0.7/32)
	Wanted    bool     // the input wants the entry
	Held      bool     // the target holds it, as far as the loop knows
	Want      cty.Value
	Have      cty.Value
	// Status is "applied", "pending" (a write is due), "failing" (with
	// Attempts and LastError), "waiting for input sync" (a delete that
	// may happen only once every input synced), "kept" (not wanted, but
	// prune is off), "unknown: …" (the last full read of the target
	// failed) or "sink not running".
	Status      string
	Attempts    int
	LastError   string
	LastErrorAt time.Time
	RetryAt     time.Time
	// Conflict says why the input keys mapping to the target key
	// disagree (on_conflict), or why the inputs of a fan-in do.
	Conflict string
	// Detail is what the target says of the key (node.Explainer): the
	// lines of a rendered file the key produced, a Kubernetes object's
	// last apply and owner.
	Detail []string `json:",omitempty"`
}

// Explain describes key, as an input key or a target key, between two
// rounds of the running loop. found is false when the loop neither holds
// nor wants it; answered is false when ctx ended first (the loop is not
// running, or is stuck in a write).
func (l *Loop) Explain(ctx context.Context, key node.Key) (e Entry, found, answered bool) {
	answered = l.inspect(ctx, func(s *state) { found = s.describe(key, &e) })
	return e, found, answered
}

// inspect runs q on the running loop's goroutine and reports whether it
// ran before ctx ended.
func (l *Loop) inspect(ctx context.Context, q func(*state)) bool {
	done := make(chan struct{})
	select {
	case l.ask <- func(s *state) { defer close(done); q(s) }:
		<-done
		return true
	case <-ctx.Done():
		return false
	}
}

// describe fills e from the loop's state.
func (s *state) describe(key node.Key, e *Entry) bool {
	tk, ok := s.targetOf(key)
	ik := key
	if !ok { // a target key, or none the loop knows
		tk, ik = key, s.inputKeyOf(key)
	}
	ks := s.keys.get(tk)
	if ks == nil {
		return false
	}
	e.InputKey, e.TargetKey = ik, tk
	e.Wanted, e.Held = ks.owners > 0, ks.held()
	e.Conflict = s.shared.clashes[tk] // why tk is in conflict, if it is
	if e.Wanted {
		e.Want = s.shown(tk, ks.want).Value
	}
	if e.Held {
		e.Have = s.shown(tk, s.keys.heldOf(ks)).Value
	}
	if f := ks.fail; f != nil {
		e.Attempts, e.LastError, e.LastErrorAt, e.RetryAt = f.attempts, f.lastErr, f.lastErrAt, f.retryAt
	}
	switch {
	case e.Attempts > 0:
		e.Status = "failing"
	case e.Held && s.fullFailures > 0:
		// What the loop last wrote may no longer be where readers look
		// (a pin now names another map): it cannot say "applied".
		e.Status = "unknown: the last read of the target failed"
	case e.Wanted && e.Held && s.keys.heldOf(ks).same(ks.want):
		e.Status = "applied"
	case e.Wanted:
		e.Status = "pending"
	case e.Held && !s.synced:
		e.Status = "waiting for input sync"
	case e.Held && !s.deletable(ks):
		e.Status = "kept"
	default:
		e.Status = "pending"
	}
	if x, ok := s.target.(node.Explainer); ok {
		e.Detail = x.Explain(tk)
	}
	return true
}

// inputKeyOf finds the input key that maps to target key tk (linear in
// the keys whose target form differs; explain only).
func (s *state) inputKeyOf(tk node.Key) node.Key {
	if ks := s.keys.get(tk); ks != nil && ks.self {
		return tk
	}
	for k, t := range s.alias {
		if t == tk {
			return k
		}
	}
	return tk
}
