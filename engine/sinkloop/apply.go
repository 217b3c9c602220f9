package sinkloop

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/backoff"
)

// batch is one round's writes: the upserts and the deletes, each with the
// states of their keys index for index, so recording each outcome needs no
// lookup.
type batch struct{ ups, dels writes }

// writes is one kind of a batch's writes and the states of their keys.
// A target written in chunks (node.Chunked) gets their Data laid end to
// end, width bytes each, the way the kernel's batch calls take them;
// another target gets their entries. errs is each write's outcome.
type writes struct {
	states  []*keyState
	entries []node.Entry
	data    []byte
	width   int
	errs    []error
}

func (b *batch) len() int { return len(b.ups.states) + len(b.dels.states) }

// reset empties b, keeping its arrays.
func (b *batch) reset() {
	for _, w := range []*writes{&b.ups, &b.dels} {
		clear(w.states)
		clear(w.entries)
		clear(w.errs)
		w.states, w.entries, w.data, w.width, w.errs = w.states[:0], w.entries[:0], w.data[:0], 0, w.errs[:0]
	}
}

// add appends the write of k at ks's key (del: its delete) to w: as an
// entry, or as Data for a target written in chunks. Data that cannot join
// w's chunk fails at once; add then reports false.
func (s *state) add(w *writes, ks *keyState, k keptEntry, del bool) bool {
	if s.chunked == nil {
		w.entries = append(w.entries, k.entry(ks.key))
	} else if !w.addData(k.Data, del) {
		failed := s.met.WriteErr
		if del {
			failed = s.met.DelErr
		}
		failed.Inc()
		s.outcome(ks, fmt.Errorf("entry of %d bytes in a chunk of %d-byte entries", len(k.Data), w.width), del)
		return false
	}
	w.states = append(w.states, ks)
	return true
}

// addData appends d to w's chunk. A delete reads only an entry's key,
// which its Data start with (node.Chunked), so a delete's Data longer
// than the chunk's width (an entry read back whole, a per-CPU value whose
// CPUs disagree) is cut to it, and a shorter one cuts the chunk. It
// reports false for Data that cannot join the chunk.
func (w *writes) addData(d []byte, del bool) bool {
	switch {
	case len(d) == 0:
		return false
	case w.width == 0:
		w.width = len(d)
	case len(d) > w.width && del:
		d = d[:w.width]
	case len(d) < w.width && del:
		for i := range w.states {
			copy(w.data[i*len(d):(i+1)*len(d)], w.data[i*w.width:])
		}
		w.data, w.width = w.data[:len(w.states)*len(d)], len(d)
	case len(d) != w.width:
		return false
	}
	w.data = appendData(w.data, d, cap(w.states))
	return true
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

// addDeletes adds the round's deletes the brake lets through to b.
func (s *state) addDeletes(b *batch) {
	for _, ks := range s.brake(s.dels) {
		s.add(&b.dels, ks, ks.actual, true)
	}
	clear(s.dels)
	s.dels = s.dels[:0]
}

// write makes w's writes (del: deletes) and leaves each one's outcome in
// w.errs.
func (s *state) write(ctx context.Context, w *writes, del bool) {
	n := len(w.states)
	w.errs = slices.Grow(w.errs[:0], n)[:n]
	switch {
	case n == 0:
	case s.chunked != nil && del:
		s.chunked.DeleteData(ctx, w.data, w.width, w.errs)
	case s.chunked != nil:
		s.chunked.UpdateData(ctx, w.data, w.width, w.errs)
	case del:
		s.target.Delete(ctx, w.entries)
	default:
		s.target.Update(ctx, w.entries)
	}
	for i := range w.entries {
		w.errs[i] = w.entries[i].Err
	}
}

// apply writes b, records the outcome per entry, schedules retries for
// failures and returns what it wrote.
func (s *state) apply(ctx context.Context, b *batch) written {
	var w written
	if !s.cfg.Gates(ctx, b.len()) {
		return w // stopped while waiting for a closed audit trail
	}
	s.write(ctx, &b.ups, false)
	if ctx.Err() != nil {
		return w // stopping: the entries not written are no failures to retry or log
	}
	early := 0 // creations before the input synced (brakeBase)
	for i, ks := range b.ups.states {
		created := !ks.inTarget()
		ok := s.outcome(ks, b.ups.errs[i], false)
		if ok && created {
			early++
		}
		w.count(ok, false)
	}
	if !s.synced {
		s.early += early
	}
	s.met.WriteOK.Add(float64(w.ups))
	s.met.WriteErr.Add(float64(w.failed)) // w has counted upserts only so far
	s.write(ctx, &b.dels, true)
	if ctx.Err() != nil {
		return w // stopping: as for the upserts, no deletes to retry or log
	}
	failed := w.failed
	for i, ks := range b.dels.states {
		w.count(s.outcome(ks, b.dels.errs[i], true), true)
	}
	s.met.DelOK.Add(float64(w.dels))
	s.met.DelErr.Add(float64(w.failed - failed))
	s.updateHealth()
	s.cfg.Actual(s.actual.n) // the target itself learns it from node.Round
	return w
}

// outcome records the result of writing ks's wanted entry (del: of
// deleting its actual one), err: the key's new state on success, its error,
// attempt count and next retry on failure. It reports whether the write
// succeeded; apply counts the outcomes in the metrics, once per batch.
func (s *state) outcome(ks *keyState, err error, del bool) bool {
	op, e := "update", ks.want
	if del {
		op, e = "delete", ks.actual
	}
	if err != nil {
		s.failed(ks, err, op, del)
		return false
	}
	if s.cfg.Tapping() {
		s.cfg.Tapped(s.shown(ks.key, e), del)
	}
	if del {
		s.actual.drop(ks)
	} else {
		s.actual.set(ks, e, onWrite) // no event came in since decide
	}
	s.clearFail(ks)
	if ks.changed != 0 {
		s.met.Latency.Observe(since(ks.changed).Seconds())
		ks.changed = 0
	}
	s.forget(ks)
	return true
}

// failed records a failed write of ks (op, del as outcome's): a
// transient failure waits for its retry on the key's backoff; a permanent
// answer (node.Rejected) waits for a change of what it concerned, or the
// next resync.
func (s *state) failed(ks *keyState, err error, op string, del bool) {
	now := time.Now()
	if ks.fail == nil {
		ks.fail = &keyFailure{heapIdx: -1}
	}
	f := ks.fail
	f.lastErr, f.lastErrAt = err.Error(), now
	f.attempts++
	if node.IsRejected(err) {
		if !f.rejected {
			s.nrejected++
		}
		f.rejected, f.rejectedDel, f.rejectedWant, f.retryAt = true, del, ks.want, time.Time{}
		s.retries.remove(ks)
		s.rejectedKey, s.rejectedErr = ks.key, f.lastErr
		s.log.Warn("write rejected; not retried until its value changes or the next resync", "op", op, "key", ks.key, "err", err, "attempt", f.attempts)
		return
	}
	s.unreject(ks)
	f.retryAt = now.Add(backoff.Delay(f.attempts - 1))
	s.retries.schedule(ks)
	s.log.Warn("write failed; will retry", "op", op, "key", ks.key, "err", err, "attempt", f.attempts)
}

// clearFail forgets ks's write failure: its write succeeded, or it needs
// none.
func (s *state) clearFail(ks *keyState) {
	if ks.fail == nil {
		return
	}
	s.retries.remove(ks)
	s.unreject(ks)
	ks.fail = nil
}

// unreject clears ks's rejected mark, if set.
func (s *state) unreject(ks *keyState) {
	if ks.fail != nil && ks.fail.rejected {
		ks.fail.rejected, ks.fail.rejectedWant = false, keptEntry{}
		s.nrejected--
	}
}

// stillRejected reports whether ks's last write was rejected
// (node.Rejected) and nothing it concerned changed since: the input
// wants the same entry (a rejected upsert) or still none (a rejected
// delete). Such a key is not written again before the next resync.
func (s *state) stillRejected(ks *keyState) bool {
	f := ks.fail
	switch {
	case f == nil || !f.rejected:
		return false
	case f.rejectedDel:
		return ks.owners == 0
	}
	return ks.owners > 0 && ks.want.same(f.rejectedWant)
}

func (s *state) updateHealth() {
	failing := s.retries.Len()
	switch {
	case failing > 0:
		ks := s.retries.next()
		detail := fmt.Sprintf("%d entries failing; retrying with backoff; next: %s (attempt %d, failing since %s): %s",
			failing, ks.key, ks.fail.attempts, ks.fail.lastErrAt.UTC().Format(time.RFC3339), ks.fail.lastErr)
		if s.nrejected > 0 {
			detail += "; " + s.rejectedDetail()
		}
		if s.nbraked > 0 {
			detail += "; " + s.brakeDetail()
		}
		s.cfg.Health(node.Degraded, detail)
	case s.nrejected > 0:
		detail := s.rejectedDetail()
		if s.nbraked > 0 {
			detail += "; " + s.brakeDetail()
		}
		s.cfg.Health(node.Degraded, detail)
	case s.nbraked > 0:
		s.cfg.Health(node.Degraded, s.brakeDetail())
	case !s.synced:
		s.cfg.Health(node.Pending, "waiting for input to sync")
	default:
		s.cfg.Health(node.Healthy, "")
	}
	s.cfg.Settled()
}

// rejectedDetail says what the target rejected, for /readyz.
func (s *state) rejectedDetail() string {
	return fmt.Sprintf("%d entries rejected by the target, not retried until their value changes or the next resync; last: %s: %s",
		s.nrejected, s.rejectedKey, s.rejectedErr)
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
