package natskv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/backoff"
	"github.com/pipeline/pipeline/internal/natsconn"
)

// run is one Run's state, owned by its goroutine.
type run struct {
	s       *Source
	env     node.Env
	out     node.Output
	conn    *natsconn.Conn
	synced  bool
	lag     prometheus.Gauge
	skipped prometheus.Counter
}

// Run implements node.Source. It watches until ctx ends, re-creating the
// watch (one ordered consumer at a time) after every reconnect and whenever
// it ends; each new watch replays the current values and replaces the
// collection with them, so downstream sees only real differences.
func (s *Source) Run(ctx context.Context, env node.Env, out node.Output) error {
	r := &run{s: s, env: env, out: out}
	r.lag = prometheus.NewGauge(prometheus.GaugeOpts{Name: "pipeline_source_nats_kv_revision_lag",
		Help: "Revisions of the watched keys the server still had to deliver after the last one the source applied."})
	r.skipped = prometheus.NewCounter(prometheus.CounterOpts{Name: "pipeline_source_nats_kv_skipped_total",
		Help: "Bucket entries skipped because their key or value could not be decoded."})
	for _, c := range []prometheus.Collector{r.lag, r.skipped} {
		if err := env.Metrics.Register(c); err != nil {
			return fmt.Errorf("%s: register metrics: %w", s.address, err)
		}
		defer env.Metrics.Unregister(c)
	}
	env.Health.Set(node.Pending, "connecting")
	conn, err := natsconn.Dial(s.conn, natsconn.Options{Name: s.address, Logger: env.Logger, Metrics: env.Metrics, Report: r.report})
	if err != nil {
		return fmt.Errorf("%s: %w", s.address, err)
	}
	defer conn.Close()
	r.conn = conn
	for attempt := 0; ctx.Err() == nil; {
		progressed, err := r.watch(ctx)
		if ctx.Err() != nil {
			break
		}
		if progressed {
			attempt = 0
		}
		if err != nil {
			env.Logger.Warn("watch failed; creating it again", "err", err)
			if !r.synced {
				env.Health.Set(node.Pending, err.Error())
			} else {
				env.Health.Set(node.Degraded, err.Error())
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff.Delay(attempt)):
		}
		attempt++
	}
	return nil
}

func (r *run) report(s natsconn.Status, detail string) {
	switch {
	case s == natsconn.Closed:
		r.env.Health.Set(node.Down, detail)
	case s != natsconn.Connected:
		r.env.Health.Set(node.Degraded, detail)
	}
	// Connected: healthy again once the new watch delivered its state.
}

// watch runs one watch: initial values until the nil marker (then Replace
// and MarkSynced), then updates, until ctx ends, the watch ends, or the
// connection changed (then it returns a nil error so that Run re-creates it
// at once). progressed says whether the initial state was delivered.
func (r *run) watch(ctx context.Context) (progressed bool, err error) {
	// Drain a pending change signal: this watch starts on the current connection.
	select {
	case <-r.conn.Changed():
	default:
	}
	kv, err := r.bind(ctx)
	if err != nil {
		return false, err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var w jetstream.KeyWatcher
	if strings.HasSuffix(r.s.prefix, ".") {
		w, err = kv.Watch(wctx, r.s.prefix+">")
	} else {
		w, err = kv.WatchAll(wctx)
	}
	if err != nil {
		return false, fmt.Errorf("watch bucket %s: %w", r.s.bucket, err)
	}
	defer w.Stop()
	if err := r.initial(ctx, w); err != nil {
		return false, err
	}
	return true, r.follow(ctx, w)
}

func (r *run) bind(ctx context.Context) (jetstream.KeyValue, error) {
	bctx, cancel := context.WithTimeout(ctx, r.s.conn.ConnectTimeout)
	defer cancel()
	kv, err := r.conn.JetStream().KeyValue(bctx, r.s.bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("bucket %s not found", r.s.bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("bind bucket %s: %w", r.s.bucket, err)
	}
	return kv, nil
}

// initial collects the current values up to the nil marker.
func (r *run) initial(ctx context.Context, w jetstream.KeyWatcher) error {
	var recs []node.Record
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.conn.Changed():
			return errors.New("connection changed during the initial values")
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("watch ended during the initial values")
			}
			if e == nil {
				r.out.Replace(recs)
				r.out.MarkSynced()
				r.synced = true
				r.env.Health.Set(node.Healthy, "watching")
				r.env.Logger.Info("bucket state loaded", "count", len(recs))
				return nil
			}
			r.applied(e)
			if rec, ok := r.record(e); ok && e.Operation() == jetstream.KeyValuePut {
				recs = append(recs, rec)
			}
		}
	}
}

// follow applies updates, batching what arrived together.
func (r *run) follow(ctx context.Context, w jetstream.KeyWatcher) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.conn.Changed():
			r.env.Logger.Info("connection changed; watching again")
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("watch ended")
			}
			var batch []node.Delta
			for e != nil {
				batch = r.delta(batch, e)
				select {
				case e, ok = <-w.Updates():
					if !ok {
						r.out.Apply(batch)
						return errors.New("watch ended")
					}
				default:
					e = nil
				}
			}
			if len(batch) > 0 {
				r.out.Apply(batch)
			}
		}
	}
}

func (r *run) delta(batch []node.Delta, e jetstream.KeyValueEntry) []node.Delta {
	r.applied(e)
	now := time.Now()
	if e.Operation() != jetstream.KeyValuePut {
		if k, ok := r.key(e.Key()); ok {
			return append(batch, node.Remove(k, now))
		}
		return batch
	}
	rec, ok := r.record(e)
	if !ok {
		return batch
	}
	return append(batch, node.Upsert(rec.Key, rec.Value, now))
}

// record decodes an entry; a broken key or value is counted and skipped.
func (r *run) record(e jetstream.KeyValueEntry) (node.Record, bool) {
	k, ok := r.key(e.Key())
	if !ok {
		return node.Record{}, false
	}
	if e.Operation() != jetstream.KeyValuePut {
		return node.Record{Key: k}, true
	}
	v, err := natsconn.DecodeValue(e.Value())
	if err != nil {
		r.skipped.Inc()
		r.env.Logger.Warn("entry skipped", "key", k, "err", err)
		return node.Record{}, false
	}
	return node.Record{Key: k, Value: v}, true
}

func (r *run) key(kvKey string) (string, bool) {
	rest, ok := strings.CutPrefix(kvKey, r.s.prefix)
	if !ok {
		return "", false
	}
	k, err := natsconn.UnescapeKey(rest)
	if err != nil {
		r.skipped.Inc()
		r.env.Logger.Warn("entry skipped", "key", kvKey, "err", err)
		return "", false
	}
	return k, true
}

// applied sets the lag from an entry taken from the watch: the count of
// watched entries the server still had to deliver after it, which comes
// with every delivery. It costs no request: a bucket status request per
// source every few seconds loads a hub's server in proportion to its
// agents.
func (r *run) applied(e jetstream.KeyValueEntry) {
	r.lag.Set(float64(e.Delta()))
}
