package natskv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/natsconn"
	"github.com/pipeline/pipeline/schema"
)

// Target is an open bucket plus key prefix. Its methods are called from one
// goroutine (the engine's sink loop), as node.Target requires.
type Target struct {
	s    *Sink
	env  node.Env
	conn *natsconn.Conn
	plan bool
	// kv is the bound bucket; nil until bound, and reset when the
	// connection changed so that a bucket lost with its server is created
	// again.
	kv        jetstream.KeyValue
	lastPurge time.Time
	// offline is set in plan mode when the embedded server does not run:
	// plan starts no server, so the bucket reads as empty.
	offline bool
	full    prometheus.Counter
	unknown prometheus.Counter
}

// Open implements node.Sink. In ModePlan it connects but creates nothing;
// a missing bucket then reads as empty.
func (s *Sink) Open(ctx context.Context, env node.Env, mode node.Mode) (node.Target, error) {
	t := &Target{s: s, env: env, plan: mode == node.ModePlan}
	opt := natsconn.Options{Name: s.address, Logger: env.Logger, Report: reportTo(env.Health)}
	t.full = prometheus.NewCounter(prometheus.CounterOpts{Name: "pipeline_sink_nats_kv_full_total",
		Help: "Writes refused because the bucket reached max_bytes."})
	t.unknown = prometheus.NewCounter(prometheus.CounterOpts{Name: "pipeline_sink_nats_kv_unknown_outcomes_total",
		Help: "Writes whose acknowledgement did not arrive in write_timeout; each was read back."})
	if !t.plan {
		opt.Metrics = env.Metrics
		for _, c := range []prometheus.Collector{t.full, t.unknown} {
			if err := env.Metrics.Register(c); err != nil {
				return nil, fmt.Errorf("register metrics: %w", err)
			}
		}
	}
	cfg, reachable := s.planConn(mode)
	if !reachable {
		t.offline = true // plan of an embedded server that is not running
		return t, nil
	}
	conn, err := natsconn.Dial(cfg, opt)
	if err != nil {
		t.unregister()
		return nil, err
	}
	t.conn = conn
	if _, err := t.bucket(ctx); err != nil && !t.plan {
		// The loop retries: a bucket that cannot be created now (server
		// down, no JetStream) is tried again before each operation.
		env.Logger.Warn("bucket not ready", "err", err)
	}
	return t, nil
}

// Ready implements node.Readier: the connection is up and the bucket
// bound (or created).
func (t *Target) Ready(ctx context.Context) error {
	if t.offline || t.plan {
		return nil
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := t.conn.WaitConnected(ctx); err != nil {
			return err
		}
		_, err := t.bucket(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-tick.C:
		}
	}
}

// reportTo maps connection states to node health.
func reportTo(h node.Health) func(natsconn.Status, string) {
	return func(s natsconn.Status, detail string) {
		switch s {
		case natsconn.Connected:
			h.Set(node.Healthy, detail)
		case natsconn.Closed:
			h.Set(node.Down, detail)
		default:
			h.Set(node.Degraded, detail)
		}
	}
}

// bucket returns the bound bucket, binding or creating it first.
func (t *Target) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	select {
	case <-t.conn.Changed():
		t.kv = nil
	default:
	}
	if t.kv != nil {
		return t.kv, nil
	}
	ctx, cancel := context.WithTimeout(ctx, t.s.conn.ConnectTimeout)
	defer cancel()
	js := t.conn.JetStream()
	kv, err := js.KeyValue(ctx, t.s.bucket)
	switch {
	case err == nil:
		t.checkConfig(ctx, kv)
	case errors.Is(err, jetstream.ErrBucketNotFound) && t.plan:
		return nil, nil
	case errors.Is(err, jetstream.ErrBucketNotFound) && t.s.create:
		if kv, err = js.CreateKeyValue(ctx, t.s.cfg); err != nil {
			return nil, fmt.Errorf("create bucket %s: %w", t.s.bucket, err)
		}
		t.env.Logger.Info("bucket created", "bucket", t.s.bucket)
	default:
		return nil, fmt.Errorf("bind bucket %s: %w", t.s.bucket, err)
	}
	t.kv = kv
	return kv, nil
}

// checkConfig names the settings of an existing bucket that differ from
// the configured ones. It changes nothing: the bucket may be shared.
func (t *Target) checkConfig(ctx context.Context, kv jetstream.KeyValue) {
	st, err := kv.Status(ctx)
	if err != nil {
		return
	}
	js, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok {
		return
	}
	have, want := js.StreamInfo().Config, t.s.cfg
	var diffs []string
	if have.MaxMsgsPerSubject != int64(want.History) {
		diffs = append(diffs, fmt.Sprintf("history %d (configured %d)", have.MaxMsgsPerSubject, want.History))
	}
	if have.Storage != want.Storage {
		diffs = append(diffs, fmt.Sprintf("storage %s (configured %s)", have.Storage, want.Storage))
	}
	if have.Replicas != want.Replicas {
		diffs = append(diffs, fmt.Sprintf("replicas %d (configured %d)", have.Replicas, want.Replicas))
	}
	if have.MaxAge != want.TTL {
		diffs = append(diffs, fmt.Sprintf("ttl %s (configured %s)", have.MaxAge, want.TTL))
	}
	if have.MaxBytes != want.MaxBytes {
		diffs = append(diffs, fmt.Sprintf("max_bytes %d (configured %d)", have.MaxBytes, want.MaxBytes))
	}
	if len(diffs) > 0 {
		t.env.Logger.Warn("bucket settings differ from the configuration; the bucket is used as it is",
			"file", t.s.bucket, "err", strings.Join(diffs, ", "))
	}
}

// Prepare implements node.Target: the entry's key is the escaped KV key
// (prefix included) and its value the JSON the bucket holds.
func (t *Target) Prepare(r node.Record) (node.Entry, error) {
	k, err := natsconn.EscapeKey(r.Key)
	if err != nil {
		return node.Entry{}, err
	}
	b, sensitive, err := natsconn.EncodeValue(r.Value)
	if err != nil {
		return node.Entry{}, err
	}
	e := entry(t.s.prefix+k, b)
	if sensitive {
		e.Value = schema.MarkSensitive(e.Value) // views mask what is stored
	}
	return e, nil
}

// entry is the one place an Entry is built, from what the bucket holds.
func entry(kvKey string, value []byte) node.Entry {
	return node.Entry{Key: kvKey, Value: cty.StringVal(string(value)), Data: value}
}

// Actual implements node.Target: every key under the prefix with its value,
// read with one watch of the latest values (ordered, flow-controlled; it
// scales to 100k+ keys where per-key reads would not). In run mode it also
// purges old delete markers on the purge_deletes schedule.
func (t *Target) Actual(ctx context.Context) ([]node.Entry, error) {
	if t.offline {
		return nil, nil
	}
	kv, err := t.bucket(ctx)
	if err != nil || kv == nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var opts []jetstream.WatchOpt
	var w jetstream.KeyWatcher
	if filter := watchFilter(t.s.prefix); filter != "" {
		w, err = kv.Watch(ctx, filter, opts...)
	} else {
		w, err = kv.WatchAll(ctx, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("read bucket %s: %w", t.s.bucket, err)
	}
	defer w.Stop()
	var out []node.Entry
	var markers []jetstream.KeyValueEntry
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("read bucket %s: %w", t.s.bucket, ctx.Err())
		case e, ok := <-w.Updates():
			if !ok {
				return nil, fmt.Errorf("read bucket %s: watch ended", t.s.bucket)
			}
			if e == nil {
				w.Stop()
				t.purge(ctx, markers)
				return out, nil
			}
			if !strings.HasPrefix(e.Key(), t.s.prefix) {
				continue
			}
			if e.Operation() == jetstream.KeyValuePut {
				out = append(out, entry(e.Key(), e.Value()))
			} else {
				markers = append(markers, e)
			}
		}
	}
}

// watchFilter narrows a watch to the prefix when the prefix ends a token;
// otherwise the caller watches everything and filters.
func watchFilter(prefix string) string {
	if prefix != "" && strings.HasSuffix(prefix, ".") {
		return prefix + ">"
	}
	return ""
}

// purge removes delete markers under the prefix older than purge_deletes,
// at most every purge_deletes/2. Each purge stops at the marker's own
// revision, so a value written since is never lost.
func (t *Target) purge(ctx context.Context, markers []jetstream.KeyValueEntry) {
	if t.plan || t.s.purgeDeletes <= 0 || len(markers) == 0 || time.Since(t.lastPurge) < t.s.purgeDeletes/2 {
		return
	}
	st, err := t.conn.JetStream().Stream(ctx, "KV_"+t.s.bucket)
	if err != nil {
		t.env.Logger.Warn("purge of delete markers failed", "err", err)
		return
	}
	limit, n := time.Now().Add(-t.s.purgeDeletes), 0
	for _, m := range markers {
		if m.Created().After(limit) {
			continue
		}
		err := st.Purge(ctx, jetstream.WithPurgeSubject("$KV."+t.s.bucket+"."+m.Key()), jetstream.WithPurgeSequence(m.Revision()+1))
		if err != nil {
			t.env.Logger.Warn("purge of delete markers failed", "err", err)
			return
		}
		n++
	}
	t.lastPurge = time.Now()
	if n > 0 {
		t.env.Logger.Info("delete markers purged", "count", n)
	}
}

var (
	_ node.Sink    = (*Sink)(nil)
	_ node.Target  = (*Target)(nil)
	_ node.Readier = (*Target)(nil)
)
