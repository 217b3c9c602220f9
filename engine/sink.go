package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/reconcile"
	"github.com/pipeline/pipeline/internal/heldindex"
)

// sinkLoop is the engine-owned reconcile loop of one sink: it keeps the
// desired state from the input, batches what arrives together, retries
// failed entries with per-key backoff, runs full reconciles (read, diff,
// apply) at start, when the input syncs and every Resync, and never deletes
// before the input is synced.
type sinkLoop struct {
	stats  *nodeStats // pipeline_node_records: the entries the target holds (reportHeld)
	n      *Node
	in     *collection
	h      *health
	log    *slog.Logger
	met    sinkMetrics
	target node.Target
	dw     node.DataWriter // target, when it takes Data alone
	opened node.Target     // opened by a reload before the swap; used by the first run
	idle   atomic.Bool
	gate   leaderGate // leader election: write only while leading
	dec    *decisions // hands decisions to audit trails; holds writes at a shut gate
	tap    *tapPort   // tap.go
	// memOpen replaces the sink's own Open in a config test (sandbox.go).
	memOpen func(ctx context.Context, env node.Env) (node.Target, error)
	// started is set once a full reconcile after the input synced has
	// finished: shutdown drains started sinks only, so a signal during
	// start-up does not wait for the whole first write.
	started atomic.Bool
	mem     *startupMemory // told when started is first set

	// keys holds the state of every target key the loop wants, holds or
	// still works on (keyState); alias maps an input key to its target
	// key where the two differ (an input key absent here maps to itself).
	keys keyStore
	held int // keys the target holds as far as the loop knows
	// heldIdx finds a held key by its bytes for a target read through
	// node.ActualScanner (nil for others); unindexed counts the held keys
	// it does not hold, and pending lists them (sink_held.go).
	heldIdx    *heldindex.Index
	unindexed  int
	pending    []uint32
	deferIndex bool
	settle     bool // a full read marked the index: Settle it when idle
	alias      map[node.Key]node.Key
	shared     sharers // target keys several input keys map to (sink_collide.go)
	// dirty lists the keys to look at in the next pass by their slots in
	// keys (keyState.ref): a slot found no longer dirty is skipped, even
	// if another key took it since (that key is listed under its own).
	dirty   []uint32
	spare   []uint32
	retries retryHeap
	fullGen uint32

	// fullRetry holds back the next full reconcile after fullFailures
	// failed reads of the target.
	fullRetry    time.Time
	fullFailures int

	// ask runs a read of the loop's state on its goroutine (explain.go).
	ask chan func()

	synced     bool
	appendOnly bool
	needFull   bool
	// resync says the next full reconcile is the periodic one, which
	// also retries the keys waiting for a retry. The others (at start,
	// when the input syncs) leave those to their retry times, so that
	// how often a failing key is written depends on the clock alone, not
	// on whether the input's sync arrived with its snapshot or after it.
	resync bool
	fulls  int
	// walked says that the last full pass looked at every key and that
	// nothing since can have made a key need work without listing it in
	// dirty or in the retry heap (a key's writes leave it settled or
	// waiting for a retry; what changes whether every key may be
	// deleted, the input's sync, an append-only target and leadership,
	// clears it). The next full pass then looks only at the keys its
	// read found changed, the dirty ones and those waiting for a retry
	// (fullPass).
	walked bool
}

type sinkMetrics struct {
	writeOK, writeErr, delOK, delErr prometheus.Counter
	reconcile, latency               prometheus.Observer
	skipped, drift                   prometheus.Counter
}

func newSinkMetrics(m *Metrics, addr string) sinkMetrics {
	return sinkMetrics{
		writeOK:   m.writes.WithLabelValues(addr, "upsert", "ok"),
		writeErr:  m.writes.WithLabelValues(addr, "upsert", "error"),
		delOK:     m.writes.WithLabelValues(addr, "delete", "ok"),
		delErr:    m.writes.WithLabelValues(addr, "delete", "error"),
		reconcile: m.reconcile.WithLabelValues(addr),
		latency:   m.latency.WithLabelValues(addr),
		skipped:   m.skipped.WithLabelValues(addr),
		drift:     m.drift.WithLabelValues(addr),
	}
}

// disown forgets every input key (a Reset follows): each key wanted so
// far is looked at again, and deleted if the new state does not want it.
func (s *sinkLoop) disown() {
	for ks := range s.keys.states {
		if ks.owners > 0 {
			s.keys.keepHeld(ks)
			ks.owners, ks.self, ks.want = 0, false, keptEntry{}
			s.touch(ks, time.Time{})
		}
	}
	clear(s.alias)
	s.shared = sharers{}
}

// run opens the target and reconciles until ctx ends.
func (s *sinkLoop) run(ctx context.Context, env node.Env, stats *nodeStats) error {
	target, err := s.open(ctx, env)
	if err != nil {
		return fmt.Errorf("%s: open target: %w", s.n.Address, err)
	}
	defer func() {
		if err := target.Close(); err != nil {
			s.log.Warn("close target failed", "err", err)
		}
	}()
	s.target, s.stats = target, stats
	s.dw, _ = target.(node.DataWriter)
	s.keys, s.alias, s.held = newKeyStore(), map[node.Key]node.Key{}, 0
	s.shared = sharers{}
	s.heldIdx, s.unindexed, s.pending, s.deferIndex, s.settle = nil, 0, nil, false, false
	if _, ok := target.(node.ActualScanner); ok {
		s.heldIdx = heldindex.New()
	}
	s.dirty, s.retries = nil, nil
	s.dec.attach(s.n.Address, target)
	defer s.dec.detach(s.n.Address)
	s.synced, s.needFull, s.resync, s.fulls, s.walked = false, true, false, 0, false
	s.fullFailures, s.fullRetry = 0, time.Time{}
	s.h.set(false, node.Pending, "waiting for input to sync")
	sub := s.in.subscribe(stats)
	defer s.in.unsubscribe(sub)

	var tick <-chan time.Time
	if s.n.Resync > 0 {
		t := time.NewTicker(s.n.Resync)
		defer t.Stop()
		tick = t.C
	}
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	for {
		if ctx.Err() != nil {
			// Stopped: select may have picked another ready case; a write
			// whose outcome apply dropped must not be repeated.
			return nil
		}
		for {
			ev, ok := sub.poll()
			if !ok {
				break
			}
			s.handle(ev)
		}
		if s.standby() {
			// Another instance leads: keep the desired state, write nothing.
		} else if s.needFull && !time.Now().Before(s.fullRetry) {
			s.full(ctx)
		} else if !s.needFull && len(s.dirty) > 0 {
			s.incremental(ctx)
		}
		if (len(s.pending) > 0 || s.settle) && len(s.dirty) == 0 && !s.needFull {
			// Nothing to write: index what the last full pass wrote, and
			// lay the index out in the order of its read, now, not in the
			// next full read (sink_held.go).
			s.reindex()
		}
		s.armRetry(retry)
		s.idle.Store(len(s.dirty) == 0 && !s.needFull)
		select {
		case <-ctx.Done():
			return nil
		case <-sub.Ready():
		case <-s.gate.changed():
		case <-tick:
			s.needFull, s.resync = true, true
		case <-retry.C:
			s.dueRetries()
		case q := <-s.ask:
			q()
		}
		s.idle.Store(false)
	}
}

func (s *sinkLoop) handle(ev node.Event) {
	if ev.Reset {
		s.disown()
		for _, r := range ev.Snapshot {
			s.put(r, time.Time{})
		}
	}
	for _, d := range ev.Deltas {
		if d.Delete {
			s.del(d.Key, d.Time)
		} else {
			s.put(node.Record{Key: d.Key, Value: d.Value}, d.Time)
		}
	}
	if ev.Synced && !s.synced {
		s.synced = true
		s.needFull, s.walked = true, false // every key may be deleted now
	}
}

// state returns the state of target key tk, creating it.
func (s *sinkLoop) state(tk node.Key) *keyState {
	if ks := s.keys.get(tk); ks != nil {
		return ks
	}
	return s.keys.add(tk)
}

// targetOf returns the target key input key k maps to.
func (s *sinkLoop) targetOf(k node.Key) (node.Key, bool) {
	if tk, ok := s.alias[k]; ok {
		return tk, true
	}
	if ks := s.keys.get(k); ks != nil && ks.self {
		return k, true
	}
	return "", false
}

func (s *sinkLoop) put(r node.Record, t time.Time) {
	e, err := s.target.Prepare(r)
	if err != nil {
		s.met.skipped.Inc()
		s.log.Warn("record skipped: cannot encode", "key", r.Key, "err", err)
		s.del(r.Key, t) // an older, valid version must not linger
		return
	}
	old, had := s.targetOf(r.Key)
	if had && old == e.Key {
		ks := s.keys.get(e.Key)
		s.keys.keepHeld(ks)
		if !s.share(ks, r.Key, keep(&e)) {
			ks.want = keep(&e)
		}
		s.touch(ks, t)
		return
	}
	if had {
		s.release(r.Key, old, t)
	}
	ks := s.state(e.Key)
	s.keys.keepHeld(ks)
	if !s.share(ks, r.Key, keep(&e)) {
		ks.want = keep(&e)
	}
	ks.owners++
	if e.Key == r.Key {
		ks.self = true
	} else {
		s.alias[r.Key] = e.Key
	}
	s.touch(ks, t)
}

func (s *sinkLoop) del(k node.Key, t time.Time) {
	if tk, ok := s.targetOf(k); ok {
		s.release(k, tk, t)
	}
}

// release drops input key k's claim on target key tk.
func (s *sinkLoop) release(k, tk node.Key, t time.Time) {
	ks := s.keys.get(tk)
	if k == tk {
		ks.self = false
	} else {
		delete(s.alias, k)
	}
	s.keys.keepHeld(ks)
	s.unshare(ks, k)
	if ks.owners--; ks.owners <= 0 {
		s.keys.keepHeld(ks)
		ks.owners, ks.want = 0, keptEntry{}
	}
	s.touch(ks, t)
}

// touch lists ks for the next pass, keeping the time of its oldest change.
func (s *sinkLoop) touch(ks *keyState, t time.Time) {
	if !ks.dirty {
		ks.dirty = true
		s.dirty = append(s.dirty, ks.ref)
	}
	if c := stamp(t); c != 0 && (ks.changed == 0 || c < ks.changed) {
		ks.changed = c
	}
}

// forget drops the state of a key that holds nothing worth keeping.
func (s *sinkLoop) forget(ks *keyState) {
	if ks.idle() {
		s.keys.remove(ks)
	}
}

// deletable reports whether a key the input no longer wants may be
// deleted now: never before the input synced, and with prune = false
// only when this run wrote it.
func (s *sinkLoop) deletable(ks *keyState) bool {
	return s.synced && (s.n.Prune || s.appendOnly || ks.written)
}

func (s *sinkLoop) incremental(ctx context.Context) {
	b := batch{tapping: s.tap.active()}
	s.takeDirty(func(ks *keyState) {
		if !ks.waiting() { // else its retry looks at its latest state
			s.decide(ks, &b)
		}
	})
	s.applyBatch(ctx, &b)
	s.commit(ctx, false)
}

// commit ends a round for a target that writes its entries as a whole
// (node.Committer).
func (s *sinkLoop) commit(ctx context.Context, full bool) {
	if c, ok := s.target.(node.Committer); ok && ctx.Err() == nil {
		for _, e := range c.Commit(ctx, node.Round{Synced: s.synced, Full: full}) {
			if s.tap.active() {
				s.tap.applied(e, false)
			}
		}
	}
}

// takeDirty empties the dirty list and visits each key on it that is
// still listed (not dropped, nor looked at by a full pass since),
// clearing its flag first.
func (s *sinkLoop) takeDirty(visit func(*keyState)) {
	dirty := s.dirty
	s.dirty, s.spare = s.spare[:0], nil
	for _, ref := range dirty {
		if ks := s.keys.at(ref); ks != nil && ks.dirty {
			ks.dirty = false
			visit(ks)
		}
	}
	s.spare = dirty[:0]
}

// decide adds what key ks needs (reconcile.Decide) to b; a key that
// needs nothing forgets its change time and its write failure and, when
// it holds nothing worth keeping, its state.
func (s *sinkLoop) decide(ks *keyState, b *batch) {
	wanted, held := ks.owners > 0, ks.applied
	switch a, _ := reconcile.Decide(wanted, held, wanted && held && (ks.ownHeld == 0 || s.keys.heldOf(ks).same(ks.want)), !wanted && held && s.deletable(ks)); a {
	case reconcile.Create, reconcile.Update:
		s.upsert(ks, b, a == reconcile.Create)
	case reconcile.Delete:
		b.dels, b.delStates = append(b.dels, s.keys.held(ks)), append(b.delStates, ks)
	default:
		// Nothing to do: a failure of an earlier write is moot too. A
		// settled key's state is only read (a full pass over 100,000 of
		// them writes none back to memory).
		if ks.fail != nil {
			s.retries.remove(ks)
			ks.fail = nil
		}
		if ks.changed != 0 {
			ks.changed = 0
		}
		if wanted && ks.ownHeld != 0 {
			s.keys.clearHeld(ks) // it holds what it wants (a restart's read): no copy of its own
		}
		s.forget(ks)
	}
}

// fullChunk is the most entries a full reconcile hands its target at once.
const fullChunk = 4096

func (s *sinkLoop) full(ctx context.Context) {
	start := time.Now()
	// The keys the pass holds are indexed in one batch afterwards
	// (sink_held.go).
	s.deferIndex = true
	defer func() { s.deferIndex = false }()
	if err := s.readActual(ctx); err != nil {
		s.h.set(false, node.Degraded, "read target: "+err.Error())
		s.noteHealth()
		s.log.Warn("full reconcile failed", "err", err)
		s.fullRetry = time.Now().Add(backoff(s.fullFailures))
		s.fullFailures++
		return
	}
	s.fullFailures, s.fullRetry = 0, time.Time{}
	if s.heldIdx != nil {
		// The keys not held yet are about to be, and listed for the index:
		// make room for them at once (100,000 at start-up).
		s.pending = slices.Grow(s.pending, max(0, s.keys.len()-s.held))
	}
	w := s.fullPass(ctx, s.resync)
	s.commit(ctx, true)
	s.dirty = s.dirty[:0]
	s.needFull, s.resync = false, false
	s.fulls++
	if s.synced && ctx.Err() == nil && !s.started.Swap(true) && s.mem != nil {
		s.mem.sinkStarted()
	}
	s.met.reconcile.Observe(time.Since(start).Seconds())
	s.logFull(start, w)
}

// fullPass decides, after a full read, every key that may need work and
// writes what they need: every key, in memory order, unless the loop has
// walked them all since anything that concerns them all changed
// (walked); then only the dirty keys (the read listed those it found
// changed or gone). The periodic resync (retryWaiting) also retries
// the keys waiting for a retry; other passes leave them to their retry
// times. A full reconcile after 1% drift of 100,000 keys so
// decides 2,000 keys, not 100,000. The pass writes as it goes, fullChunk
// entries at a time: 100,000 keys never gather in one slice, and each
// entry is written while its state is still in the caches.
func (s *sinkLoop) fullPass(ctx context.Context, retryWaiting bool) written {
	p := passState{b: s.fullBatch(), retryWaiting: retryWaiting}
	if s.walked && retryWaiting {
		for _, ks := range slices.Clone([]*keyState(s.retries)) {
			s.touch(ks, time.Time{})
		}
	}
	if s.walked {
		s.takeDirty(func(ks *keyState) { s.passVisit(ctx, ks, &p) })
	} else {
		for ks := range s.keys.states {
			s.passVisit(ctx, ks, &p)
		}
		s.walked = !p.stopped
	}
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
func (s *sinkLoop) passVisit(ctx context.Context, ks *keyState, p *passState) {
	if p.stopped {
		return // write nothing more
	}
	if ks.dirty {
		ks.dirty = false // only then: a pass that writes no state dirties no cache line
	}
	if !p.retryWaiting && ks.waiting() {
		return // its retry looks at its latest state
	}
	if !s.createAhead(ks, &p.b) {
		s.decide(ks, &p.b)
	}
	if p.b.len() >= fullChunk {
		p.w.plus(s.apply(ctx, &p.b))
		p.b.reset()
		p.b.tapping = s.tap.active()
		p.stopped = ctx.Err() != nil
	}
}

// fullBatch is an empty batch with room for a full pass's chunk: its
// Data, for a target that takes Data alone, else its entries.
func (s *sinkLoop) fullBatch() batch {
	n := min(s.keys.len(), fullChunk)
	if s.dw != nil {
		return batch{dataStates: make([]*keyState, 0, n), dataAhead: make([]bool, 0, n), tapping: s.tap.active()}
	}
	return batch{ups: make([]node.Entry, 0, n), upStates: make([]*keyState, 0, n), tapping: s.tap.active()}
}

// readActual replaces what the loop believes the target holds with what
// Actual reads, counting the differences as drift after the first read.
// An append-only target keeps what the loop emitted.
func (s *sinkLoop) readActual(ctx context.Context) error {
	if s.appendOnly {
		return nil
	}
	if s.fullGen++; s.fullGen == 0 {
		s.fullGen = 1 // a new index entry's mark is 0: no read is numbered 0
	}
	gen := s.fullGen
	drift := 0
	hold := func(e node.Entry) {
		ks := s.state(e.Key)
		if ks.seen == gen || (ks.indexed && s.heldIdx.Marked(s.keys.heldOf(ks).Data, gen)) {
			return // a target listing a key twice: keep the first
		}
		changed := !ks.applied || !s.keys.held(ks).Same(e)
		if changed && ks.applied {
			drift++
		}
		s.holdEntry(ks, keep(&e), false)
		ks.seen = gen
		if changed && s.walked {
			s.touch(ks, time.Time{}) // for fullPass
		}
		if ks.indexed { // held already with these bytes
			s.heldIdx.Mark(e.Data, gen)
		}
	}
	var err error
	if sc, ok := s.target.(node.ActualScanner); ok {
		s.reindex()
		// An entry held with the same bytes is only marked as seen in
		// this read, in the index: on 100,000 keys, one probe of one
		// cache line instead of a map lookup and three pointer chases.
		err = sc.ScanActual(ctx, func(data []byte, width int, known []bool) { s.heldIdx.MarkMany(data, width, gen, known) }, hold)
		s.settle = true
	} else {
		var entries []node.Entry
		entries, err = s.target.Actual(ctx)
		for _, e := range entries {
			hold(e)
		}
	}
	if errors.Is(err, node.ErrNoActualState) {
		s.appendOnly, s.walked = true, false // every key may be deleted now
		return nil
	}
	if err != nil {
		return err
	}
	drift += s.dropUnseen(gen)
	s.reportHeld()
	if drift > 0 && s.fulls > 0 {
		s.met.drift.Add(float64(drift))
		s.noteDrift(drift)
		s.log.Info("drift found in target", "entries", drift)
	}
	return nil
}
