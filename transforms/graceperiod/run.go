package graceperiod

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
)

// Transform is a configured grace_period.
type Transform struct {
	address string
	delay   time.Duration
	pending *queue
}

var _ node.Transform = (*Transform)(nil)

// Pending lists the deletions waiting, earliest first. It is safe to call
// while the transform runs.
func (t *Transform) Pending() []PendingDelete { return t.pending.list() }

// Run implements node.Transform.
func (t *Transform) Run(ctx context.Context, env node.Env, in node.Input, out node.Output) error {
	gauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "pipeline_grace_pending_deletions",
		Help: "Deletions waiting for their grace period."}, func() float64 { return float64(t.pending.size()) })
	if err := env.Metrics.Register(gauge); err != nil {
		return fmt.Errorf("%s: register metrics: %w", t.address, err)
	}
	t.pending.clear() // a restarted run starts from the input's reset
	passed := map[node.Key]cty.Value{}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	events := node.Events(ctx, in)
	synced := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
			var dels []node.Delta
			for _, it := range t.pending.popDue(time.Now()) {
				delete(passed, it.key)
				dels = append(dels, node.Remove(it.key, it.since))
			}
			if len(dels) > 0 {
				out.Apply(dels)
			}
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			var ups []node.Delta
			if ev.Reset {
				ups = t.reset(ev.Snapshot, passed)
			}
			for _, d := range ev.Deltas {
				if d.Delete {
					if _, ok := passed[d.Key]; ok {
						t.pending.schedule(d.Key, time.Now().Add(t.delay), d.Time)
					}
					continue
				}
				t.pending.cancel(d.Key)
				if old, ok := passed[d.Key]; !ok || !old.RawEquals(d.Value) {
					passed[d.Key] = d.Value
					ups = append(ups, d)
				}
			}
			if len(ups) > 0 {
				out.Apply(ups)
			}
			if ev.Synced && !synced {
				synced = true
				out.MarkSynced()
			}
		}
		if due, ok := t.pending.next(); ok {
			timer.Reset(max(time.Until(due), 0))
		} else {
			timer.Stop()
		}
	}
}

// reset makes passed follow a new input state: new or changed keys pass
// now, missing keys start their grace period.
func (t *Transform) reset(snapshot []node.Record, passed map[node.Key]cty.Value) []node.Delta {
	now := time.Now()
	present := make(map[node.Key]struct{}, len(snapshot))
	var ups []node.Delta
	for _, r := range snapshot {
		present[r.Key] = struct{}{}
		t.pending.cancel(r.Key)
		if old, ok := passed[r.Key]; !ok || !old.RawEquals(r.Value) {
			passed[r.Key] = r.Value
			ups = append(ups, node.Upsert(r.Key, r.Value, time.Time{}))
		}
	}
	for k := range passed {
		if _, ok := present[k]; !ok {
			if !t.pending.has(k) {
				t.pending.schedule(k, now.Add(t.delay), now)
			}
		}
	}
	return ups
}
