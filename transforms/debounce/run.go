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

var _ node.Transform = (*Transform)(nil)

type runner struct {
	out     node.Output
	pending map[node.Key]node.Delta
	order   []node.Key // first-seen order of pending keys, for stable batches
	first   time.Time  // when the oldest pending change arrived
	emitted map[node.Key]struct{}
	flushes prometheus.Counter
	ops     *prometheus.CounterVec
}

// Run implements node.Transform.
func (t *Transform) Run(ctx context.Context, env node.Env, in node.Input, out node.Output) error {
	r := &runner{out: out, pending: map[node.Key]node.Delta{}, emitted: map[node.Key]struct{}{},
		flushes: prometheus.NewCounter(prometheus.CounterOpts{Name: "pipeline_debounce_flushes_total",
			Help: "Batches flushed downstream."}),
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pipeline_debounce_deltas_total",
			Help: "Deltas flushed downstream, by what they did to the key."}, []string{"op"}),
	}
	for _, c := range []prometheus.Collector{r.flushes, r.ops} {
		if err := env.Metrics.Register(c); err != nil {
			return fmt.Errorf("%s: register metrics: %w", t.address, err)
		}
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	events := node.Events(ctx, in)
	synced := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
			r.flush()
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			if ev.Reset {
				r.flush()
				r.out.Replace(ev.Snapshot)
				r.emitted = make(map[node.Key]struct{}, len(ev.Snapshot))
				for _, rec := range ev.Snapshot {
					r.emitted[rec.Key] = struct{}{}
				}
			}
			r.add(ev.Deltas)
			if ev.Synced && !synced {
				synced = true
				r.flush() // the initial state is not held back
				out.MarkSynced()
			}
			if len(r.pending) > 0 {
				wait := min(t.interval, time.Until(r.first.Add(t.maxWait)))
				timer.Reset(max(wait, 0))
			} else {
				timer.Stop()
			}
		}
	}
}

func (r *runner) add(deltas []node.Delta) {
	for _, d := range deltas {
		if prev, ok := r.pending[d.Key]; ok {
			if !prev.Time.IsZero() && (d.Time.IsZero() || prev.Time.Before(d.Time)) {
				d.Time = prev.Time // latency counts from the oldest coalesced change
			}
		} else {
			r.order = append(r.order, d.Key)
		}
		if len(r.pending) == 0 {
			r.first = time.Now()
		}
		r.pending[d.Key] = d
	}
}

func (r *runner) flush() {
	if len(r.pending) == 0 {
		return
	}
	batch := make([]node.Delta, 0, len(r.pending))
	var created, modified, deleted int
	for _, k := range r.order {
		d := r.pending[k]
		_, had := r.emitted[k]
		switch {
		case d.Delete && had:
			deleted++
			delete(r.emitted, k)
		case d.Delete:
			continue // created and deleted within the window: downstream never saw it
		case had:
			modified++
		default:
			created++
			r.emitted[k] = struct{}{}
		}
		batch = append(batch, d)
	}
	r.pending = make(map[node.Key]node.Delta, len(r.pending))
	r.order = r.order[:0]
	r.flushes.Inc()
	r.ops.WithLabelValues("created").Add(float64(created))
	r.ops.WithLabelValues("modified").Add(float64(modified))
	r.ops.WithLabelValues("deleted").Add(float64(deleted))
	r.out.Apply(batch)
}
