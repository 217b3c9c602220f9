package sinkloop

import (
	"context"
	"errors"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
)

// Entry is a loop's view of one key, for explain: what the input wants
// there, what the loop last wrote there and the target's answer, and
// what the target held there when read (explain reads it: ActualAt).
// Its status compares want with that read, never with the loop's memory
// of its writes.
type Entry struct {
	InputKey  node.Key // the key of the record the sink's input holds
	TargetKey node.Key // the key in the target (10.0.0.7 -> 10.0.0.7/32)
	Wanted    bool     // the input wants the entry
	Want      cty.Value
	// Wrote is the entry this run last wrote at the key with the
	// target's answer ok (Written); a failed write is in Attempts and
	// LastError instead.
	Written bool
	Wrote   cty.Value
	// InTarget and Actual are what the target held at the key when read
	// at ActualAt; ReadError says why it could not be read (ActualAt is
	// then the time of the attempt). An append-only target cannot be
	// read (node.ErrNoActualState): ActualAt stays zero.
	InTarget  bool
	Actual    cty.Value
	ActualAt  time.Time
	ReadError string
	// Status is "applied" (the target holds what is wanted, compared
	// entry to entry), "wanted, not in the target" (refused, lost or not
	// written yet), "wanted, the target holds another value", "appended"
	// (an append-only target accepted the wanted entry), "pending" (a
	// write is due), "waiting for input sync" (not wanted, and deleted
	// only once every input synced), "kept" (not wanted, but prune is
	// off), "held by the deletion brake" (not wanted, but more deletes
	// are pending than max_deletes allows: Brake says why), "not in the
	// target" (not wanted, and gone), "unknown: …" (the target could not
	// be read) or "sink not running".
	Status string
	Brake  string `json:",omitempty"`
	// Rejected says that the target rejected the last write for good
	// (node.Rejected; LastError says why): it is not retried until the
	// wanted value changes or the next resync, and RetryAt is zero.
	Rejected    string `json:",omitempty"`
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
// rounds of the running loop, reading the target at that key (bounded by
// ctx). found is false when the loop neither holds nor wants it;
// answered is false when ctx ended first (the loop is not running, or is
// stuck in a write).
func (l *Loop) Explain(ctx context.Context, key node.Key) (e Entry, found, answered bool) {
	answered = l.inspect(ctx, func(s *state) { found = s.describe(ctx, key, &e) })
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

// describe fills e from the loop's state and a read of the target at the
// key.
func (s *state) describe(ctx context.Context, key node.Key, e *Entry) bool {
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
	e.Wanted = ks.owners > 0
	e.Conflict = s.desired.shared.clashes[tk] // why tk is in conflict, if it is
	var want node.Entry
	if e.Wanted {
		want = s.shown(tk, ks.want)
		e.Want = want.Value
	}
	if ks.written() {
		e.Written, e.Wrote = true, s.shown(tk, ks.actual).Value
	}
	if f := ks.fail; f != nil {
		e.Attempts, e.LastError, e.LastErrorAt, e.RetryAt = f.attempts, f.lastErr, f.lastErrAt, f.retryAt
		if f.rejected {
			e.Rejected = "rejected by the target: not retried until the wanted value changes or the next resync"
		}
	}
	probe := want
	if !e.Wanted {
		probe = s.shown(tk, ks.actual) // its key's bytes, for a target read by key
	}
	actual, in, err := s.readKey(ctx, probe)
	e.ActualAt = time.Now()
	appendOnly := errors.Is(err, node.ErrNoActualState)
	switch {
	case appendOnly:
		e.ActualAt = time.Time{}
	case err != nil:
		e.ReadError = err.Error()
	default:
		e.InTarget = in
		if in {
			e.Actual = actual.Value
		}
	}
	e.Status = s.status(ks, e, want, actual, appendOnly)
	if x, ok := s.target.(node.Explainer); ok {
		e.Detail = x.Explain(tk)
	}
	return true
}

// status is the key's status from what the target held when read: want
// and that read compared entry to entry (node.Entry.Same, as plan
// compares them).
func (s *state) status(ks *keyState, e *Entry, want, actual node.Entry, appendOnly bool) string {
	switch {
	case e.ReadError != "":
		return "unknown: reading the target failed"
	case appendOnly && e.Wanted && e.Written && e.Attempts == 0 && ks.actual.same(ks.want):
		return "appended"
	case appendOnly:
		return "pending"
	case e.Wanted && e.InTarget && actual.Same(want):
		return "applied"
	case e.Wanted && e.InTarget:
		return "wanted, the target holds another value"
	case e.Wanted:
		return "wanted, not in the target"
	case !e.InTarget:
		return "not in the target"
	case !s.synced:
		return "waiting for input sync"
	case !s.deletable(ks):
		return "kept"
	case ks.braked:
		e.Brake = s.brakeDetail()
		return "held by the deletion brake"
	}
	return "pending"
}

// readKey reads the target at e's key: through node.KeyReader when the
// target has it (and e carries the key's bytes, for a target that reads
// by them), else in a full read (Actual). It returns
// node.ErrNoActualState for an append-only target.
func (s *state) readKey(ctx context.Context, e node.Entry) (node.Entry, bool, error) {
	if s.appendOnly {
		return node.Entry{}, false, node.ErrNoActualState
	}
	if r, ok := s.target.(node.KeyReader); ok && (e.Data != nil || s.chunked == nil) {
		return r.ReadEntry(ctx, e)
	}
	all, err := s.target.Actual(ctx)
	if err != nil {
		return node.Entry{}, false, err
	}
	for _, a := range all {
		if a.Key == e.Key {
			return a, true, nil
		}
	}
	return node.Entry{}, false, nil
}
