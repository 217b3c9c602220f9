package sinkloop

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/reconcile"
)

// Loop is the reconcile loop of one sink: it keeps the desired state from
// its input, batches what arrives together, retries failed entries with
// per-key backoff, runs full reconciles (read, diff, apply) at start, when
// the input syncs and every Resync, and never deletes before the input is
// synced. A Loop outlives its runs: each Run starts from a fresh state.
type Loop struct {
	cfg  Config
	log  *slog.Logger
	met  Metrics
	ask  chan func(*state) // a read of the running state, on its goroutine (Explain)
	idle atomic.Bool
	// started is set once a full reconcile after the input synced has
	// finished: shutdown drains started sinks only, so a signal during
	// start-up does not wait for the whole first write.
	started atomic.Bool
	last    *state // the state of the current or last run
}

// Config is what a Loop needs from the engine. Every func and series but
// Leader must be set.
type Config struct {
	Address    string // the sink's address, in logs and errors
	Prune      bool   // delete the keys the input does not want, not only those this run wrote
	OnConflict string // node.ConflictFirst, ConflictLast or ConflictError
	// Resync is the period of the full reconcile; 0: none after the first.
	Resync  time.Duration
	Log     *slog.Logger
	Metrics Metrics
	// Leader gates the writes under leader election; nil: always write.
	Leader Leader
	// Health records the loop's view of the sink's health, and Settled is
	// called when a round may have moved it into or out of Degraded.
	Health  func(st node.State, detail string)
	Settled func()
	// Gates blocks before a round of writes while an audit trail cannot
	// record them; false: ctx ended first and the round writes nothing.
	Gates func(ctx context.Context, writes int) bool
	// Drift is told how many entries a full read found changed behind the
	// loop's back.
	Drift func(count int)
	// Tapping reports whether a tap watches the sink; Tapped tells it of
	// one write.
	Tapping func() bool
	Tapped  func(e node.Entry, del bool)
	// Started is called once, at the end of the first full reconcile over
	// a synced input.
	Started func()
	// Actual is told how many entries the target holds after every round.
	Actual func(n int)
	// MaxDeletes is the deletion brake (brake.go); the zero value is the
	// default.
	MaxDeletes node.MaxDeletes
	// Braked, if set, is told when the brake holds more deletes (braked,
	// and why) or releases them (braked 0).
	Braked func(braked int, detail string)
}

// Leader is leader election as a loop sees it (engine.Leadership).
type Leader interface {
	// Term returns the current term and whether this instance may write.
	Term() (uint64, bool)
	// Changed is closed at the next start or stop of leading.
	Changed() <-chan struct{}
}

// Metrics are the series a loop updates (engine/metrics.go names them).
type Metrics struct {
	WriteOK, WriteErr, DelOK, DelErr prometheus.Counter
	Reconcile, Latency               prometheus.Observer
	Skipped, Drift                   prometheus.Counter
	// DeletesBraked is how many deletes the brake holds; nil: not exported.
	DeletesBraked prometheus.Gauge
}

// New returns a loop that runs with cfg.
func New(cfg Config) *Loop {
	if cfg.Metrics.DeletesBraked == nil {
		cfg.Metrics.DeletesBraked = prometheus.NewGauge(prometheus.GaugeOpts{Name: "unregistered"})
	}
	if cfg.Braked == nil {
		cfg.Braked = func(int, string) {}
	}
	return &Loop{cfg: cfg, log: cfg.Log, met: cfg.Metrics, ask: make(chan func(*state))}
}

// Idle reports whether the loop has nothing to write (any goroutine).
func (l *Loop) Idle() bool { return l.idle.Load() }

// Started reports whether a full reconcile over the synced input has
// finished: the target holds what the input said (any goroutine).
func (l *Loop) Started() bool { return l.started.Load() }

// Standby reports, without touching the loop's state (any goroutine),
// whether leader election is on and this instance does not lead.
func (l *Loop) Standby() bool {
	if l == nil || l.cfg.Leader == nil {
		return false
	}
	_, ok := l.cfg.Leader.Term()
	return !ok
}

// Wrote reports whether the last run wrote key (on_remove = "clean"
// deletes what a sink without prune wrote). Call it once Run returned.
func (l *Loop) Wrote(key node.Key) bool {
	if l.last == nil {
		return false
	}
	ks := l.last.keys.get(key)
	return ks != nil && ks.written()
}

// state is one run of a Loop, built fresh by Run, in three parts:
// desired (what the input wants, in target keys: desired.go), actual
// (what the target held when last read: actual.go) and the core that
// brings the one to the other (this file, apply.go, full.go, brake.go):
// the dirty list, the retry heap, reconcile.Decide and the batches.
type state struct {
	*Loop
	target node.Target
	// chunked is target, when it is read and written in chunks of Data.
	chunked node.Chunked

	// keys holds the state of every target key the loop wants, finds in
	// the target or still works on (keyState).
	keys    keyStore
	desired desired
	actual  actual

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
	// walked is the regime of the last full pass that looked at every
	// key (zero: none did). While the regime is unchanged, nothing can
	// have made a key need work without listing it in dirty or in the
	// retry heap (a key's writes leave it settled or waiting for a
	// retry), so the next full pass looks only at the keys its read found
	// changed, the dirty ones and those waiting for a retry (fullPass).
	walked regime
	term   uint64 // the leader's term the loop last reconciled in
	leads  int    // how many times this run started leading (startTerm)

	// dels are the deletes the round decided, for the brake to judge
	// (brake.go); braked lists the keys whose delete the brake holds back
	// by slot (a slot no longer braked is skipped), nbraked counts them.
	dels    []*keyState
	braked  []uint32
	nbraked int
	base    int // the keys in the target when the round began (brake.go: brakeBase)
	early   int // the keys this run created before its input synced

	// nrejected counts the keys whose last write the target rejected
	// (node.Rejected), waiting for a change or the next resync;
	// rejectedKey and rejectedErr name the last one, for /readyz.
	nrejected   int
	rejectedKey node.Key
	rejectedErr string
}

// regime is what decides, besides each key's own state, what every key
// needs: whether keys may be deleted (the input synced, the target is
// append-only) and the start of leading (a follower drops its pending
// work, and reads the target afresh when it leads again). set tells a
// regime from the zero value, which no pass walked in.
type regime struct {
	synced, appendOnly, set bool
	leads                   int
}

// regime is the state's regime now.
func (s *state) regime() regime {
	return regime{synced: s.synced, appendOnly: s.appendOnly, set: true, leads: s.leads}
}

// walkedAll reports whether the last full pass over every key was in the
// regime of now (state.walked).
func (s *state) walkedAll() bool { return s.walked == s.regime() }

// newState is the state a run of l over target starts from.
func (l *Loop) newState(target node.Target) *state {
	s := &state{Loop: l, target: target, keys: newKeyStore(), desired: desired{alias: map[node.Key]node.Key{}}, needFull: true}
	s.chunked, _ = target.(node.Chunked)
	s.actual = newActual(&s.keys, s.chunked != nil)
	return s
}

// Run reconciles target with what in says until ctx ends. The caller
// opens the target before and closes it after.
func (l *Loop) Run(ctx context.Context, target node.Target, in node.Poller) error {
	s := l.newState(target)
	l.last = s
	s.cfg.Health(node.Pending, "waiting for input to sync")
	s.met.DeletesBraked.Set(0) // a run computes its brake afresh
	var tick <-chan time.Time
	if s.cfg.Resync > 0 {
		t := time.NewTicker(s.cfg.Resync)
		defer t.Stop()
		tick = t.C
	}
	var leader <-chan struct{}
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	for {
		if ctx.Err() != nil {
			// Stopped: select may have picked another ready case; a write
			// whose outcome apply dropped must not be repeated.
			return nil
		}
		for ev, ok := in.Poll(); ok; ev, ok = in.Poll() {
			s.handle(ev)
		}
		term, lead := s.leading()
		if lead && term != s.term {
			s.startTerm(term)
		}
		switch {
		case !lead:
			s.standBy() // another instance leads: keep the desired state, write nothing
		case s.needFull && !time.Now().Before(s.fullRetry):
			s.full(ctx)
		case !s.needFull && len(s.dirty) > 0:
			s.incremental(ctx)
		}
		if len(s.dirty) == 0 && !s.needFull {
			// Nothing to write: index what the last full pass wrote, and
			// lay the index out in the order of its read, now, not in the
			// next full read (actual.go).
			s.actual.tidy()
		}
		s.armRetry(retry)
		if s.cfg.Leader != nil {
			leader = s.cfg.Leader.Changed()
		}
		s.idle.Store(len(s.dirty) == 0 && !s.needFull)
		select {
		case <-ctx.Done():
			return nil
		case <-in.Ready():
		case <-leader:
		case <-tick:
			s.needFull, s.resync = true, true
		case <-retry.C:
			s.retries.due(time.Now(), func(ks *keyState) { s.touch(ks, time.Time{}) }) // for the next pass
		case q := <-s.ask:
			q(s)
		}
		s.idle.Store(false)
	}
}

func (s *state) handle(ev node.Event) {
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
		s.synced, s.needFull = true, true // every key may be deleted now
	}
}

// touch lists ks for the next pass, keeping the time of its oldest change.
func (s *state) touch(ks *keyState, t time.Time) {
	if !ks.dirty {
		ks.dirty = true
		s.dirty = append(s.dirty, ks.ref)
	}
	if c := stamp(t); c != 0 && (ks.changed == 0 || c < ks.changed) {
		ks.changed = c
	}
}

// forget drops the state of a key that holds nothing worth keeping.
func (s *state) forget(ks *keyState) {
	if ks.idle() {
		s.keys.remove(ks)
	}
}

// deletable reports whether a key the input no longer wants may be
// deleted now: never before the input synced, and with prune = false
// only when this run wrote it.
func (s *state) deletable(ks *keyState) bool {
	return s.synced && (s.cfg.Prune || s.appendOnly || ks.written())
}

func (s *state) incremental(ctx context.Context) {
	var b batch
	s.base = s.brakeBase()
	s.takeDirty(func(ks *keyState) {
		// A key waiting for its retry is looked at then, one rejected for
		// good when what it wants changes or at the next resync.
		if !ks.waiting() && !s.stillRejected(ks) {
			s.decide(ks, &b)
		}
	})
	s.addDeletes(&b)
	start := time.Now()
	w := s.apply(ctx, &b)
	s.commit(ctx, false, &w)
	logRound(s.log, "batch applied", start, w, true)
}

// commit ends a round: a Chunked target is told its count, and a
// document (node.Document) is committed: the entries it hands back failed
// are counted in w, the round's count, and recorded as failed writes
// (commitFailed).
func (s *state) commit(ctx context.Context, full bool, w *written) {
	if ctx.Err() != nil {
		return
	}
	if s.chunked != nil {
		s.chunked.Count(s.actual.n)
	}
	c, ok := s.target.(node.Document)
	if !ok {
		return
	}
	failed := w.failed
	for _, e := range c.Commit(ctx, node.Round{Synced: s.synced, Full: full}) {
		switch {
		case e.Err != nil:
			s.commitFailed(e, w)
		case s.cfg.Tapping():
			s.cfg.Tapped(e, false)
		}
	}
	if w.failed > failed {
		s.updateHealth()
		s.cfg.Actual(s.actual.n)
	}
}

// commitFailed takes back the loop's record of the write of e's key,
// which the Document says failed, and records the failure through
// outcome, so the key is retried. A wanted key is not in the target as
// far as the loop knows, so its retry writes it through. A deleted key
// holds what the target says it still holds, as written by this run (it
// was deletable), so its retry deletes it again. A write this round
// counted as done is counted as failed instead.
func (s *state) commitFailed(e node.Entry, w *written) {
	ks := s.stateOf(e.Key)
	del := ks.owners == 0
	if del {
		if !ks.inTarget() && ks.fail == nil && w.dels > 0 {
			w.dels--
		}
		s.actual.set(ks, s.keep(&e), onWrite) // still there, as this run wrote it
		s.met.DelErr.Inc()
	} else {
		if ks.fail == nil && w.ups > 0 {
			w.ups--
		}
		s.unbrake(ks)
		s.actual.drop(ks)
		s.met.WriteErr.Inc()
	}
	s.outcome(ks, e.Err, del)
	w.failed++
}

// takeDirty empties the dirty list and visits each key on it that is
// still listed (not dropped, nor looked at by a full pass since),
// clearing its flag first.
func (s *state) takeDirty(visit func(*keyState)) {
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
func (s *state) decide(ks *keyState, b *batch) {
	s.unbrake(ks)
	wanted, in := ks.owners > 0, ks.inTarget()
	same := ks.same()
	switch a, _ := reconcile.Decide(wanted, in, same, !wanted && in && s.deletable(ks)); a {
	case reconcile.Create, reconcile.Update:
		s.add(&b.ups, ks, ks.want, false)
	case reconcile.Delete:
		s.dels = append(s.dels, ks) // judged by the brake at the end of the round
	default:
		// Nothing to do: a failure of an earlier write is moot too. A
		// settled key's state is only read (a full pass over 100,000 of
		// them writes none back to memory).
		s.clearFail(ks)
		if ks.changed != 0 {
			ks.changed = 0
		}
		if same && !ks.actual.shares(ks.want) {
			ks.actual = ks.want // equal (a restart's read): keep one copy
		}
		s.forget(ks)
	}
}

// leading reports the leader's term and whether this instance may write
// now: always, without leader election (term 0).
func (s *state) leading() (uint64, bool) {
	if s.cfg.Leader == nil {
		return 0, true
	}
	return s.cfg.Leader.Term()
}

// standBy drops the pending work of an instance that does not lead. A
// follower keeps its desired state from the input but drops its pending
// work and retries: when it starts leading it reads the target afresh
// (the previous leader wrote it) in one full reconcile (startTerm).
func (s *state) standBy() {
	s.term, s.needFull = 0, false
	s.dels = s.dels[:0]
	s.dropBrake()
	s.takeDirty(s.forget)
	for ks := s.retries.next(); ks != nil; ks = s.retries.next() {
		s.clearFail(ks)
		s.forget(ks)
	}
	s.cfg.Health(node.Healthy, "standby: another instance leads; writes wait for the lease")
}

// startTerm starts reconciling in a new leader's term, as a restart does:
// a full reconcile that writes rejected keys again too.
func (s *state) startTerm(term uint64) {
	s.term = term
	s.leads++
	s.needFull, s.resync = true, true
	s.fullRetry = time.Time{}
	s.log.Info("leading: reconciling the target", "generation", term)
}
