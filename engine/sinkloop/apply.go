package sinkloop

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/pipeline/pipeline/engine/node"
)

// batch is one round's writes: the entries to upsert and delete and,
// index for index, the states of their keys, so recording each outcome
// needs no lookup. For a target written in chunks (node.Chunked)
// the upserts whose Data have the batch's width go instead into data,
// end to end, with their states in dataStates; dataAhead says which of
// those were recorded as held when they were decided (holdAhead).
type batch struct {
	ups, dels           []node.Entry
	upStates, delStates []*keyState
	data                []byte
	width               int
	dataStates          []*keyState
	dataAhead           []bool
	errs                []error // UpdateData's, index for index with dataStates
	// tapping is set when the batch is made (and, in a full pass, each
	// time it is emptied) if a tap watches the sink: then no creation is
	// recorded ahead, so that the tap sees each write. A tap that starts
	// while a batch is being decided misses that batch's creations (at
	// most FullChunk), as one that starts just after them would.
	tapping bool
}

// quietFor reports whether writing ks's entry in b needs nothing
// recorded but that the target holds it: no failure to clear, no change
// time to observe, no tap to tell (holdAhead).
func (b *batch) quietFor(ks *keyState) bool { return ks.fail == nil && ks.changed == 0 && !b.tapping }

func (b *batch) len() int { return len(b.ups) + len(b.dels) + len(b.dataStates) }

// reset empties b, keeping its arrays.
func (b *batch) reset() {
	clear(b.upStates)
	clear(b.delStates)
	clear(b.dataStates)
	clear(b.errs)
	b.ups, b.dels, b.upStates, b.delStates = b.ups[:0], b.dels[:0], b.upStates[:0], b.delStates[:0]
	b.data, b.width, b.dataStates, b.dataAhead, b.errs = b.data[:0], 0, b.dataStates[:0], b.dataAhead[:0], b.errs[:0]
}

// upsert adds the upsert of ks's wanted entry to b; create says the
// target does not hold the key.
func (s *state) upsert(ks *keyState, b *batch, create bool) {
	d := ks.want.Data
	if s.chunked == nil || len(d) == 0 || (b.width != 0 && len(d) != b.width) {
		b.ups, b.upStates = append(b.ups, ks.wanted()), append(b.upStates, ks)
		return
	}
	b.width = len(d)
	b.data, b.dataStates = appendData(b.data, d, cap(b.dataStates)), append(b.dataStates, ks)
	b.dataAhead = append(b.dataAhead, create && s.holdAhead(ks, b))
}

// appendData appends d to buf, which, when first appended to, gets room
// for n entries like d. An 8-byte d (the flagship's key and value) is
// moved as one word, where append calls memmove.
func appendData(buf, d []byte, n int) []byte {
	if cap(buf) == 0 {
		buf = make([]byte, 0, max(n, 1)*len(d))
	}
	if l := len(buf); len(d) == 8 && cap(buf)-l >= 8 {
		buf = buf[:l+8]
		*(*[8]byte)(buf[l:]) = [8]byte(d)
		return buf
	}
	return append(buf, d...)
}

// holdAhead reports whether the creation of ks's entry, just decided,
// can be recorded as held now, before it is written, and records it if
// so: a key with no failure to clear, no change time to observe and no
// tap to tell. Recording a success after the write would touch the key's
// state a second time, once the target's calls have pushed it out of the
// caches (docs/data-path.md §5). apply takes the record back for an entry
// whose write fails (undoAhead).
func (s *state) holdAhead(ks *keyState, b *batch) bool {
	if !b.quietFor(ks) {
		return false
	}
	s.holdNew(ks, ks.want.Data, onWrite) // it holds nothing: no held entry to drop or keep
	return true
}

// undoAhead takes back holdAhead's record of ks, which held nothing
// before: the target does not hold the entry after all.
func (s *state) undoAhead(ks *keyState) { s.dropEntry(ks) }

// undoAllAhead takes back every record holdAhead made for b, whose
// writes were not made or have no outcome (the loop is stopping).
func (s *state) undoAllAhead(b *batch) {
	for i, ahead := range b.dataAhead {
		if ahead {
			s.undoAhead(b.dataStates[i])
		}
	}
}

// apply writes b, records the outcome per entry, schedules retries for
// failures and returns what it wrote.
func (s *state) apply(ctx context.Context, b *batch) written {
	var w written
	if !s.cfg.Gates(ctx, b.len()) {
		s.undoAllAhead(b)
		return w // stopped while waiting for a closed audit trail
	}
	if n := len(b.dataStates); n > 0 {
		b.errs = slices.Grow(b.errs[:0], n)[:n]
		s.chunked.UpdateData(ctx, b.data, b.width, b.errs)
		if ctx.Err() != nil {
			s.undoAllAhead(b)
			return w // stopping: the entries not written are no failures to retry or log
		}
		for i, ks := range b.dataStates {
			err := b.errs[i]
			if b.dataAhead[i] {
				if err == nil {
					w.ups++ // recorded already
					continue
				}
				s.undoAhead(ks)
			}
			e := ks.wanted()
			e.Err = err
			w.count(s.outcome(ks, &e, false), false)
		}
	}
	if len(b.ups) > 0 {
		s.target.Update(ctx, b.ups)
		if ctx.Err() != nil {
			return w // stopping
		}
		for i := range b.ups {
			w.count(s.outcome(b.upStates[i], &b.ups[i], false), false)
		}
	}
	s.met.WriteOK.Add(float64(w.ups))
	s.met.WriteErr.Add(float64(w.failed)) // w has counted upserts only so far
	if len(b.dels) > 0 {
		s.target.Delete(ctx, b.dels)
		failed := w.failed
		for i := range b.dels {
			w.count(s.outcome(b.delStates[i], &b.dels[i], true), true)
		}
		s.met.DelOK.Add(float64(w.dels))
		s.met.DelErr.Add(float64(w.failed - failed))
	}
	s.updateHealth()
	s.reportHeld()
	return w
}

// outcome records the result of writing e at ks's key: the key's new
// state on success, its error, attempt count and next retry on failure.
// It reports whether the write succeeded; apply counts the outcomes in
// the metrics, once per batch.
func (s *state) outcome(ks *keyState, e *node.Entry, del bool) bool {
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
		f.retryAt = now.Add(Backoff(f.attempts))
		f.attempts++
		s.retries.schedule(ks)
		s.log.Warn("write failed; will retry", "op", op, "key", e.Key, "err", e.Err, "attempt", f.attempts)
		return false
	}
	if s.cfg.Tapping() {
		s.cfg.Tapped(*e, del)
	}
	if del {
		s.dropEntry(ks)
	} else {
		s.holdEntry(ks, keep(e), onWrite) // e is ks.want: no event came in since decide
	}
	s.retries.remove(ks)
	ks.fail = nil
	if ks.changed != 0 {
		s.met.Latency.Observe(since(ks.changed).Seconds())
		ks.changed = 0
	}
	s.forget(ks)
	return true
}

func (s *state) updateHealth() {
	failing := s.retries.Len()
	switch {
	case failing > 0:
		ks := s.retries.next()
		s.cfg.Health(node.Degraded, fmt.Sprintf("%d entries failing; retrying with backoff; next: %s (attempt %d, failing since %s): %s",
			failing, ks.key, ks.fail.attempts, ks.fail.lastErrAt.UTC().Format(time.RFC3339), ks.fail.lastErr))
	case !s.synced:
		s.cfg.Health(node.Pending, "waiting for input to sync")
	default:
		s.cfg.Health(node.Healthy, "")
	}
	s.cfg.Settled()
}

func (s *state) armRetry(t *time.Timer) {
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
func (s *state) dueRetries() {
	s.retries.due(time.Now(), func(ks *keyState) { s.touch(ks, time.Time{}) })
}

// Backoff is exponential from 100ms to 30s: the wait before the next
// attempt of a failed write, full read or node run.
func Backoff(attempt int) time.Duration {
	d := 100 * time.Millisecond
	for i := 0; i < attempt && d < 30*time.Second; i++ {
		d *= 2
	}
	if d > 30*time.Second {
		d = 30 * time.Second
	}
	return d
}
