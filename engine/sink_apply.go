package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/pipeline/pipeline/engine/node"
)

// batch is one round's writes: the entries to upsert and delete and,
// index for index, the states of their keys, so recording each outcome
// needs no lookup.
type batch struct {
	ups, dels           []node.Entry
	upStates, delStates []*keyState
}

func (b *batch) len() int { return len(b.ups) + len(b.dels) }

// reset empties b, keeping its arrays.
func (b *batch) reset() {
	clear(b.upStates)
	clear(b.delStates)
	b.ups, b.dels, b.upStates, b.delStates = b.ups[:0], b.dels[:0], b.upStates[:0], b.delStates[:0]
}

// apply writes b, records the outcome per entry, schedules retries for
// failures and returns what it wrote.
func (s *sinkLoop) apply(ctx context.Context, b *batch) written {
	var w written
	if !s.hold(ctx, b.len()) {
		return w // stopped while a closed audit trail held the writes
	}
	if len(b.ups) > 0 {
		s.target.Update(ctx, b.ups)
		if ctx.Err() != nil {
			return w // stopping: the entries not written are no failures to retry or log
		}
		failed := w.failed
		for i := range b.ups {
			w.count(s.outcome(b.upStates[i], &b.ups[i], false), false)
		}
		s.met.writeOK.Add(float64(w.ups))
		s.met.writeErr.Add(float64(w.failed - failed))
	}
	if len(b.dels) > 0 {
		s.target.Delete(ctx, b.dels)
		failed := w.failed
		for i := range b.dels {
			w.count(s.outcome(b.delStates[i], &b.dels[i], true), true)
		}
		s.met.delOK.Add(float64(w.dels))
		s.met.delErr.Add(float64(w.failed - failed))
	}
	s.updateHealth()
	s.reportHeld()
	return w
}

// outcome records the result of writing e at ks's key: the key's new
// state on success, its error, attempt count and next retry on failure.
// It reports whether the write succeeded; apply counts the outcomes in
// the metrics, once per batch.
func (s *sinkLoop) outcome(ks *keyState, e *node.Entry, del bool) bool {
	op := "update"
	if del {
		op = "delete"
	}
	if e.Err != nil {
		now := time.Now()
		if ks.fail == nil {
			ks.fail = &keyFailure{heapIdx: -1}
		}
		f := ks.fail
		f.lastErr, f.lastErrAt = e.Err.Error(), now
		f.retryAt = now.Add(backoff(f.attempts))
		f.attempts++
		s.retries.schedule(ks)
		s.log.Warn("write failed; will retry", "op", op, "key", e.Key, "err", e.Err, "attempt", f.attempts)
		return false
	}
	if s.tap.active() {
		s.tap.applied(*e, del)
	}
	if del {
		s.dropEntry(ks)
		ks.written = false
	} else {
		s.holdEntry(ks, e)
		ks.written = true
	}
	s.retries.remove(ks)
	ks.fail = nil
	if !ks.changed.IsZero() {
		s.met.latency.Observe(time.Since(ks.changed).Seconds())
		ks.changed = time.Time{}
	}
	s.forget(ks)
	return true
}

func (s *sinkLoop) updateHealth() {
	failing := s.retries.Len()
	switch {
	case failing > 0:
		ks := s.retries.next()
		s.h.set(false, node.Degraded, fmt.Sprintf("%d entries failing; retrying with backoff; next: %s (attempt %d, failing since %s): %s",
			failing, ks.key, ks.fail.attempts, ks.fail.lastErrAt.UTC().Format(time.RFC3339), ks.fail.lastErr))
	case !s.synced:
		s.h.set(false, node.Pending, "waiting for input to sync")
	default:
		s.h.set(false, node.Healthy, "")
	}
	s.noteHealth()
}

func (s *sinkLoop) armRetry(t *time.Timer) {
	var next time.Time
	if s.needFull {
		next = s.fullRetry
	}
	if ks := s.retries.next(); ks != nil && (next.IsZero() || ks.fail.retryAt.Before(next)) {
		next = ks.fail.retryAt
	}
	if next.IsZero() {
		next = time.Now().Add(time.Hour)
	}
	t.Reset(time.Until(next))
}

// dueRetries lists every key whose retry is due for the next pass.
func (s *sinkLoop) dueRetries() {
	s.retries.due(time.Now(), func(ks *keyState) { s.touch(ks, time.Time{}) })
}

// backoff is exponential from 100ms to 30s.
func backoff(attempt int) time.Duration {
	d := 100 * time.Millisecond
	for i := 0; i < attempt && d < 30*time.Second; i++ {
		d *= 2
	}
	if d > 30*time.Second {
		d = 30 * time.Second
	}
	return d
}
