package debounce

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipeline/pipeline/engine/node"
)

// Transform is a configured debounce.
type Transform struct {
	address           string
	interval, maxWait time.Duration
}

// Run implements node.Transform. One goroutine (this one) owns the pending
// deltas; node.ConsumeTimed waits on its timer and its input together.
func (t *Transform) Run(ctx context.Context, env node.Env, in node.Input, out node.Output) error {
	r, err := t.newRunner(env, out)
	if err != nil {
		return err
	}
	return node.ConsumeTimed(ctx, env, in, t.address, r.handle, r.flush, r.due)
}

// runner is the state of one Run.
type runner struct {
	t       *Transform
	now     func() time.Time // the node's clock
	out     node.Holder      // what has been flushed: the output holds it
	pending []node.Delta     // coalesced: one delta per key, in first-seen order
	pos     map[node.Key]int // key -> index in pending
	first   time.Time        // arrival of the oldest pending change
	last    time.Time        // arrival of the newest pending change
	synced  bool

	flushes                    prometheus.Counter
	created, modified, deleted prometheus.Counter
}

func (t *Transform) newRunner(env node.Env, out node.Output) (*runner, error) {
	flushes := prometheus.NewCounter(prometheus.CounterOpts{Name: "pipeline_debounce_flushes_total",
		Help: "Batches of coalesced deltas flushed downstream (resets pass at once and are not counted)."})
	ops := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pipeline_debounce_deltas_total",
		Help: "Deltas flushed downstream, by what they did to the key downstream."}, []string{"op"})
	for _, c := range []prometheus.Collector{flushes, ops} {
		if err := env.Metrics.Register(c); err != nil {
			return nil, fmt.Errorf("%s: register metrics: %w", t.address, err)
		}
	}
	return &runner{t: t, out: node.Hold(out), now: env.Now, pos: map[node.Key]int{}, flushes: flushes,
		created: ops.WithLabelValues("created"), modified: ops.WithLabelValues("modified"), deleted: ops.WithLabelValues("deleted")}, nil
}

// handle takes one input event.
func (r *runner) handle(ev node.Event) {
	if ev.Reset {
		r.reset(ev.Snapshot)
	}
	r.add(ev.Deltas)
	if ev.Synced && !r.synced {
		r.synced = true
		r.flush() // the initial state is not held back by interval
		r.out.MarkSynced()
	}
}

// reset makes the output equal to snapshot at once. Pending deltas are
// dropped, not flushed: they are older than the snapshot, which already
// holds their outcome, so flushing them could only add churn downstream.
func (r *runner) reset(snapshot []node.Record) {
	clear(r.pending)
	r.pending = r.pending[:0]
	clear(r.pos)
	r.out.Replace(snapshot)
}

// add coalesces deltas into pending: the last delta of a key wins, and it
// keeps the Time of the oldest change it replaces (latency counts from
// there).
func (r *runner) add(deltas []node.Delta) {
	if len(deltas) == 0 {
		return
	}
	now := r.now()
	if len(r.pending) == 0 {
		r.first = now
	}
	r.last = now
	for _, d := range deltas {
		i, ok := r.pos[d.Key]
		if !ok {
			r.pos[d.Key] = len(r.pending)
			r.pending = append(r.pending, d)
			continue
		}
		if prev := r.pending[i].Time; !prev.IsZero() && (d.Time.IsZero() || prev.Before(d.Time)) {
			d.Time = prev
		}
		r.pending[i] = d
	}
}

// due returns when pending deltas must be flushed: interval after the last
// change, but no later than max_wait after the first.
func (r *runner) due() (time.Time, bool) {
	if len(r.pending) == 0 {
		return time.Time{}, false
	}
	due := r.last.Add(r.t.interval)
	if limit := r.first.Add(r.t.maxWait); limit.Before(due) {
		due = limit
	}
	return due, true
}

// flush publishes the pending deltas as one batch. A delete of a key
// downstream never saw (created and deleted within the window) is dropped.
func (r *runner) flush() {
	if len(r.pending) == 0 {
		return
	}
	batch := r.pending[:0] // filtered in place; the output takes the slice
	var created, modified, deleted int
	for _, d := range r.pending { // one delta per key: the output's state before the batch decides
		_, had := r.out.Held(d.Key)
		switch {
		case d.Delete && !had:
			continue
		case d.Delete:
			deleted++
		case had:
			modified++
		default:
			created++
		}
		batch = append(batch, d)
	}
	r.pending = nil
	clear(r.pos)
	if len(batch) == 0 {
		return
	}
	r.flushes.Inc()
	r.created.Add(float64(created))
	r.modified.Add(float64(modified))
	r.deleted.Add(float64(deleted))
	r.out.Apply(batch)
}

// TakesPacked implements node.PackedInput: debounce holds deltas back
// and never reads their values, so packed values pass through packed.
func (t *Transform) TakesPacked() {}

var (
	_ node.Transform   = (*Transform)(nil)
	_ node.PackedInput = (*Transform)(nil)
)
