package graceperiod

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
)

// Transform is a configured grace_period. What it has passed is what its
// output holds (node.Holder), and the deletions waiting live on the
// Transform, not in one Run: the engine restarts a failed Run on the same
// Transform and the same output collection, and the restarted Run must go
// on from what downstream holds, so that a key missing after the restart
// still gets its grace period. Run must not be called concurrently with
// itself.
type Transform struct {
	address string
	delay   time.Duration
	pending *queue // deletions waiting; shared with Pending
}

// Pending lists the deletions waiting for their grace period, earliest
// first (then by key), with the time each will pass. It is safe to call
// while the transform runs, from any goroutine; plan and explain use it.
func (t *Transform) Pending() []PendingDelete { return t.pending.list() }

// PendingDue implements node.PendingLister: when the deletion of k passes
// downstream, if it waits. Safe from any goroutine; explain uses it.
func (t *Transform) PendingDue(k node.Key) (time.Time, bool) { return t.pending.due(k) }

var _ node.PendingLister = (*Transform)(nil)

// Run implements node.Transform. One timer serves every pending deletion:
// it is set for the earliest due time after each event and each expiry.
func (t *Transform) Run(ctx context.Context, env node.Env, in node.Input, out node.Output) error {
	gauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "pipeline_grace_pending_deletions",
		Help: "Deletions waiting for their grace period."}, func() float64 { return float64(t.pending.size()) })
	if err := env.Metrics.Register(gauge); err != nil {
		return fmt.Errorf("%s: register metrics: %w", t.address, err)
	}
	held := node.Hold(out)
	return node.ConsumeTimed(ctx, env, in, t.address, func(ev node.Event) { t.handle(env, ev, held) },
		func() { t.expire(env, held) }, t.pending.next)
}

// expire passes the deletions whose grace period has ended, as one batch.
// Each carries the Time of the delete it comes from.
func (t *Transform) expire(env node.Env, out node.Output) {
	var dels []node.Delta
	for _, it := range t.pending.popDue(env.Now()) {
		dels = append(dels, node.Remove(it.key, it.since))
	}
	if len(dels) > 0 {
		out.Apply(dels)
		env.Decide(node.Decision{Kind: node.DecisionGraceDeletion, Node: t.address, Detail: fmt.Sprintf("%d deletions passed after their grace period", len(dels)), Attrs: map[string]string{"count": fmt.Sprint(len(dels))}})
	}
}

// handle takes one input event.
func (t *Transform) handle(env node.Env, ev node.Event, out node.Holder) {
	if ev.Reset {
		t.reset(env.Now(), ev.Snapshot, out)
	}
	var ups []node.Delta
	// last finds a key's last upsert in ups, once the event has two deltas;
	// passed is a key as passed so far: by this event, else the output.
	var last map[node.Key]int
	passed := func(k node.Key) (cty.Value, bool) {
		if i, ok := last[k]; ok {
			return ups[i].Value, true
		}
		r, ok := out.Held(k)
		return r.Value, ok
	}
	for _, d := range ev.Deltas {
		if d.Delete {
			if _, ok := passed(d.Key); ok {
				t.pending.schedule(d.Key, env.Now().Add(t.delay), d.Time) // a new delete restarts the wait
			}
			continue
		}
		// A re-add cancels the pending deletion and passes only when the
		// value changed. Other upserts pass without a comparison: upstream
		// collections emit only changes, and downstream drops no-ops anyway.
		if t.pending.cancel(d.Key) {
			if v, ok := passed(d.Key); ok && v.RawEquals(d.Value) {
				continue
			}
		}
		if last == nil && len(ev.Deltas) > 1 {
			last = make(map[node.Key]int)
		}
		if last != nil {
			last[d.Key] = len(ups)
		}
		ups = append(ups, d)
	}
	if len(ups) > 0 {
		out.Apply(ups)
	}
	if ev.Synced {
		out.MarkSynced()
	}
}

// reset follows a new input state: keys present pass now (a pending
// deletion of theirs is cancelled), keys passed but missing start their
// grace period (one already waiting keeps its due time). The output is
// then made equal to the snapshot plus the keys still waiting with
// Replace, which also repairs it after a restart.
func (t *Transform) reset(now time.Time, snapshot []node.Record, out node.Holder) {
	present := make(map[node.Key]struct{}, len(snapshot))
	records := snapshot
	for _, r := range snapshot {
		present[r.Key] = struct{}{}
		t.pending.cancel(r.Key)
	}
	for _, r := range out.HeldRecords() {
		if _, ok := present[r.Key]; ok {
			continue
		}
		if !t.pending.has(r.Key) {
			t.pending.schedule(r.Key, now.Add(t.delay), now)
		}
		records = append(records, r)
	}
	out.Replace(records)
}

// TakesPacked implements node.PackedInput: grace_period compares values
// only with RawEquals, so packed values pass through packed.
func (t *Transform) TakesPacked() {}

var (
	_ node.Transform   = (*Transform)(nil)
	_ node.PackedInput = (*Transform)(nil)
)
