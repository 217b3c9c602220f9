package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/reconcile"
)

// sinkLoop is the engine-owned reconcile loop of one sink: it keeps the
// desired state from the input, batches what arrives together, retries
// failed entries with per-key backoff, runs full reconciles (read, diff,
// apply) at start, when the input syncs and every Resync, and never deletes
// before the input is synced.
type sinkLoop struct {
	n      *Node
	in     *collection
	h      *health
	log    *slog.Logger
	met    sinkMetrics
	target node.Target
	idle   atomic.Bool

	prepared map[node.Key]node.Entry // input key -> prepared entry
	desired  map[node.Key]node.Entry // target key -> entry
	owners   map[node.Key]int        // target key -> input keys mapping to it
	applied  map[node.Key]node.Entry // target key -> what the target holds, as far as we know
	written  map[node.Key]struct{}   // target keys this run wrote (prune = false deletes only these)
	pending  map[node.Key]time.Time  // target keys to look at; the time of their oldest change
	attempts map[node.Key]int
	retryAt  map[node.Key]time.Time

	// fullRetry holds back the next full reconcile after fullFailures
	// failed reads of the target.
	fullRetry    time.Time
	fullFailures int

	synced     bool
	appendOnly bool
	needFull   bool
	fulls      int
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

func (s *sinkLoop) reset() {
	s.prepared = map[node.Key]node.Entry{}
	s.desired = map[node.Key]node.Entry{}
	s.owners = map[node.Key]int{}
}

// run opens the target and reconciles until ctx ends.
func (s *sinkLoop) run(ctx context.Context, env node.Env, stats *nodeStats) error {
	target, err := s.n.Impl.(node.Sink).Open(ctx, env, node.ModeRun)
	if err != nil {
		return fmt.Errorf("%s: open: %w", s.n.Address, err)
	}
	defer func() {
		if err := target.Close(); err != nil {
			s.log.Warn("close target failed", "err", err)
		}
	}()
	s.target = target
	s.reset()
	s.applied, s.pending = map[node.Key]node.Entry{}, map[node.Key]time.Time{}
	s.written = map[node.Key]struct{}{}
	s.attempts, s.retryAt = map[node.Key]int{}, map[node.Key]time.Time{}
	s.synced, s.needFull, s.fulls = false, true, 0
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
		for {
			ev, ok := sub.poll()
			if !ok {
				break
			}
			s.handle(ev)
		}
		if s.needFull && !time.Now().Before(s.fullRetry) {
			s.full(ctx)
		} else if !s.needFull && len(s.pending) > 0 {
			s.incremental(ctx)
		}
		s.armRetry(retry)
		s.idle.Store(len(s.pending) == 0 && !s.needFull)
		select {
		case <-ctx.Done():
			return nil
		case <-sub.Ready():
		case <-tick:
			s.needFull = true
		case <-retry.C:
			s.dueRetries()
		}
		s.idle.Store(false)
	}
}

func (s *sinkLoop) handle(ev node.Event) {
	if ev.Reset {
		old := s.desired
		s.reset()
		for _, r := range ev.Snapshot {
			s.put(r, time.Time{})
		}
		for k := range old {
			if _, ok := s.desired[k]; !ok {
				s.touch(k, time.Time{})
			}
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
		s.needFull = true
	}
}

func (s *sinkLoop) put(r node.Record, t time.Time) {
	e, err := s.target.Prepare(r)
	if err != nil {
		s.met.skipped.Inc()
		s.log.Warn("record skipped: cannot encode", "key", r.Key, "err", err)
		s.del(r.Key, t) // an older, valid version must not linger
		return
	}
	if old, ok := s.prepared[r.Key]; ok {
		if old.Key == e.Key {
			s.prepared[r.Key] = e
			s.desired[e.Key] = e
			s.touch(e.Key, t)
			return
		}
		s.release(r.Key, t)
	}
	s.prepared[r.Key] = e
	s.owners[e.Key]++
	s.desired[e.Key] = e
	s.touch(e.Key, t)
}

func (s *sinkLoop) del(k node.Key, t time.Time) {
	if _, ok := s.prepared[k]; ok {
		s.release(k, t)
	}
}

func (s *sinkLoop) release(k node.Key, t time.Time) {
	old := s.prepared[k]
	delete(s.prepared, k)
	s.owners[old.Key]--
	if s.owners[old.Key] <= 0 {
		delete(s.owners, old.Key)
		delete(s.desired, old.Key)
	}
	s.touch(old.Key, t)
}

func (s *sinkLoop) touch(tk node.Key, t time.Time) {
	if prev, ok := s.pending[tk]; !ok || (!t.IsZero() && (prev.IsZero() || t.Before(prev))) {
		s.pending[tk] = t
	}
}

// incremental applies the pending keys. Deletes wait for the input to sync
// (the full reconcile at sync time handles them).
func (s *sinkLoop) incremental(ctx context.Context) {
	var ups, dels []node.Entry
	times := s.pending
	s.pending = map[node.Key]time.Time{}
	for tk := range times {
		if _, waiting := s.retryAt[tk]; waiting {
			s.pending[tk] = times[tk]
			continue
		}
		if e, ok := s.desired[tk]; ok {
			if have, ok := s.applied[tk]; !ok || !have.Value.RawEquals(e.Value) {
				ups = append(ups, e)
			}
		} else if have, ok := s.applied[tk]; ok && s.synced && (s.n.Prune || s.appendOnly || s.wrote(tk)) {
			dels = append(dels, have)
		}
	}
	s.apply(ctx, ups, dels, times)
}

// full reads the target, diffs it against the desired state and applies the
// difference. Before the input is synced it only writes, never deletes.
func (s *sinkLoop) full(ctx context.Context) {
	start := time.Now()
	actual, err := s.actual(ctx)
	if err != nil {
		s.h.set(false, node.Degraded, "read target: "+err.Error())
		s.log.Warn("full reconcile failed", "err", err)
		s.fullRetry = time.Now().Add(backoff(s.fullFailures))
		s.fullFailures++
		return
	}
	s.fullFailures, s.fullRetry = 0, time.Time{}
	if s.fulls > 0 && !s.appendOnly {
		s.countDrift(actual)
	}
	prune := s.synced && (s.n.Prune || s.appendOnly)
	changes := reconcile.Diff(s.n.Address, s.desired, actual, prune)
	ups, dels := make([]node.Entry, 0, len(changes)), []node.Entry(nil)
	for _, c := range changes {
		if c.Action == reconcile.Delete {
			dels = append(dels, c.Old)
		} else {
			ups = append(ups, c.New)
		}
	}
	if s.synced && !prune {
		// Without prune, still delete what this run wrote and no longer wants.
		for k := range s.written {
			if _, want := s.desired[k]; !want {
				if e, there := actual[k]; there {
					dels = append(dels, e)
				}
			}
		}
	}
	s.applied = actual
	times := s.pending
	s.pending = map[node.Key]time.Time{}
	s.needFull = false
	s.apply(ctx, ups, dels, times)
	s.fulls++
	s.met.reconcile.Observe(time.Since(start).Seconds())
	s.log.Debug("full reconcile", "count", len(ups)+len(dels), "duration", time.Since(start))
}

func (s *sinkLoop) actual(ctx context.Context) (map[node.Key]node.Entry, error) {
	if s.appendOnly {
		return s.applied, nil
	}
	entries, err := s.target.Actual(ctx)
	if errors.Is(err, node.ErrNoActualState) {
		s.appendOnly = true
		return s.applied, nil
	}
	if err != nil {
		return nil, err
	}
	out := make(map[node.Key]node.Entry, len(entries))
	for _, e := range entries {
		out[e.Key] = e
	}
	return out, nil
}

func (s *sinkLoop) countDrift(actual map[node.Key]node.Entry) {
	n := 0
	for k, want := range s.applied {
		if have, ok := actual[k]; !ok || !have.Value.RawEquals(want.Value) {
			n++
		}
	}
	if n > 0 {
		s.met.drift.Add(float64(n))
		s.log.Info("drift found in target", "count", n)
	}
}

func (s *sinkLoop) wrote(k node.Key) bool {
	_, ok := s.written[k]
	return ok
}
