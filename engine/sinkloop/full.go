package sinkloop

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/backoff"
)

// FullChunk is the most entries a full reconcile hands its target at once.
const FullChunk = 4096

func (s *state) full(ctx context.Context) {
	start := time.Now()
	// The keys the pass writes are indexed in one batch afterwards
	// (actual.go).
	s.actual.batch(true, s.keys.len()-s.actual.n)
	defer s.actual.batch(false, 0)
	if err := s.readActual(ctx); err != nil {
		s.cfg.Health(node.Degraded, "read target: "+err.Error())
		s.cfg.Settled()
		s.log.Warn("full reconcile failed", "err", err)
		s.fullRetry = time.Now().Add(backoff.Delay(s.fullFailures))
		s.fullFailures++
		return
	}
	s.fullFailures, s.fullRetry = 0, time.Time{}
	s.base = s.brakeBase()
	w := s.fullPass(ctx, s.resync)
	s.commit(ctx, true, &w)
	s.dirty = s.dirty[:0]
	s.needFull, s.resync = false, false
	s.fulls++
	if s.synced && ctx.Err() == nil && !s.started.Swap(true) {
		s.cfg.Started()
	}
	s.met.Reconcile.Observe(time.Since(start).Seconds())
	// One that writes nothing is logged once the input is synced (a
	// restart over an equal target says so), not before (the input is
	// still arriving).
	logRound(s.log, "full reconcile", start, w, !s.synced)
}

// fullPass decides, after a full read, every key that may need work and
// writes what they need: every key, in memory order, unless the loop has
// walked them all in the regime of now (state.walked); then only the
// dirty keys (the read listed those it found changed or gone). The
// periodic resync (retryWaiting) also retries the keys waiting for a
// retry; other passes leave them to their retry times. A full reconcile
// after 1% drift of 100,000 keys so decides 2,000 keys, not 100,000. The pass writes as it goes, FullChunk
// entries at a time: 100,000 keys never gather in one slice, and each
// entry is written while its state is still in the caches.
func (s *state) fullPass(ctx context.Context, retryWaiting bool) written {
	p := passState{b: s.fullBatch(), retryWaiting: retryWaiting}
	// The rejected keys, written again by a resync, are not listed
	// anywhere: look at every key then.
	dirtyOnly := s.walkedAll() && !(retryWaiting && s.nrejected > 0)
	if dirtyOnly && retryWaiting {
		for _, ks := range slices.Clone([]*keyState(s.retries)) {
			s.touch(ks, time.Time{})
		}
	}
	if dirtyOnly {
		s.takeDirty(func(ks *keyState) { s.passVisit(ctx, ks, &p) })
	} else {
		s.walked = regime{}
		for ks := range s.keys.states {
			s.passVisit(ctx, ks, &p)
		}
		if !p.stopped {
			s.walked = s.regime()
		}
	}
	if p.stopped {
		s.dels = s.dels[:0]
	}
	// The deletes go last, once the pass has seen them all: the brake
	// judges them together, and applies them FullChunk at a time.
	for dels := s.brake(s.dels); len(dels) > 0; {
		n := min(len(dels), FullChunk-p.b.len())
		for _, ks := range dels[:n] {
			s.add(&p.b.dels, ks, ks.actual, true)
		}
		dels = dels[n:]
		if len(dels) > 0 {
			p.w.plus(s.apply(ctx, &p.b))
			p.b.reset()
			if ctx.Err() != nil {
				break
			}
		}
	}
	clear(s.dels)
	s.dels = s.dels[:0]
	p.w.plus(s.apply(ctx, &p.b))
	return p.w
}

// passState is a full pass's batch, what it wrote so far, whether it
// stopped and whether it retries the keys waiting for a retry.
type passState struct {
	b            batch
	w            written
	stopped      bool
	retryWaiting bool
}

// passVisit decides ks in a full pass, writing the batch when it is full.
func (s *state) passVisit(ctx context.Context, ks *keyState, p *passState) {
	if p.stopped {
		return // write nothing more
	}
	if ks.dirty {
		ks.dirty = false // only then: a pass that writes no state dirties no cache line
	}
	if !p.retryWaiting && (ks.waiting() || s.stillRejected(ks)) {
		return // its retry looks at its latest state; a rejected one waits for a resync
	}
	s.decide(ks, &p.b)
	if p.b.len() >= FullChunk {
		p.w.plus(s.apply(ctx, &p.b))
		p.b.reset()
		p.stopped = ctx.Err() != nil
	}
}

// fullBatch is an empty batch with room for a full pass's chunk of
// upserts.
func (s *state) fullBatch() batch {
	n := min(s.keys.len(), FullChunk)
	b := batch{ups: writes{states: make([]*keyState, 0, n)}}
	if s.chunked == nil {
		b.ups.entries = make([]node.Entry, 0, n)
	}
	return b
}

// readActual replaces what the loop knows of the target (actual) with
// what a full read finds, counting the differences as drift after the
// first read. An append-only target keeps what the loop emitted.
func (s *state) readActual(ctx context.Context) error {
	if s.appendOnly {
		return nil
	}
	if s.fullGen++; s.fullGen == 0 {
		s.fullGen = 1 // a new index entry's mark is 0: no read is numbered 0
	}
	gen := s.fullGen
	// A pass that looks only at the dirty keys needs the changed ones
	// listed (fullPass); one that looks at every key does not.
	list := s.walkedAll()
	drift := 0
	var seen slots
	found := func(e node.Entry) {
		ks := s.stateOf(e.Key)
		if seen.has(ks.ref) || s.actual.seen(ks, gen) {
			return // a target listing a key twice: keep the first
		}
		k := s.keep(&e)
		changed := !ks.inTarget() || !ks.actual.same(k)
		if changed && ks.inTarget() {
			drift++
		}
		s.actual.set(ks, k, onRead)
		seen.add(ks.ref)
		if changed && list {
			s.touch(ks, time.Time{})
		}
		s.actual.mark(ks, gen)
	}
	var err error
	if s.chunked != nil {
		err = s.actual.scan(ctx, s.chunked, gen, found)
	} else {
		var entries []node.Entry
		entries, err = s.target.Actual(ctx)
		for _, e := range entries {
			found(e)
		}
	}
	if errors.Is(err, node.ErrNoActualState) {
		s.appendOnly = true // every key may be deleted now
		return nil
	}
	if err != nil {
		return err
	}
	s.actual.unseen(gen, seen, func(ks *keyState) {
		drift++
		s.unbrake(ks)
		s.actual.drop(ks)
		if list && ks.owners > 0 {
			s.touch(ks, time.Time{}) // wanted and gone
		}
		s.forget(ks)
	})
	s.cfg.Actual(s.actual.n)
	if drift > 0 && s.fulls > 0 {
		s.met.Drift.Add(float64(drift))
		s.cfg.Drift(drift)
		s.log.Info("drift found in target", "entries", drift)
	}
	return nil
}
