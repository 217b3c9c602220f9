package graceperiod

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
)

// Transform is a configured grace_period. Its state (the records it has
// passed and the deletions waiting) lives on the Transform, not in one Run:
// the engine restarts a failed Run on the same Transform and the same output
// collection, and the restarted Run must go on from what downstream holds,
// so that a key missing after the restart still gets its grace period. Run
// must not be called concurrently with itself.
type Transform struct {
	address string
	delay   time.Duration
	passed  map[node.Key]passed // the output as downstream holds it; Run's goroutine only
	pending *queue              // deletions waiting; shared with Pending
}

// passed is a record as the output holds it: its value and its provenance,
// which a Replace (after a reset) must hand on, or explain and plan lose
// where the record came from.
type passed struct {
	v cty.Value
	o *node.Origin
}

// Pending lists the deletions waiting for their grace period, earliest
// first (then by key), with the time each will pass. It is safe to call
// while the transform runs, from any goroutine; plan and explain use it.
func (t *Transform) Pending() []PendingDelete { return t.pending.list() }

// PendingDue implements node.PendingDue: when the deletion of k passes
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
	return node.ConsumeTimed(ctx, env, in, t.address, func(ev node.Event) { t.handle(env, ev, out) },
		func() { t.expire(env, out) }, t.pending.next)
}

// expire passes the deletions whose grace period has ended, as one batch.
// Each carries the Time of the delete it comes from.
func (t *Transform) expire(env node.Env, out node.Output) {
	var dels []node.Delta
	for _, it := range t.pending.popDue(env.Now()) {
		delete(t.passed, it.key)
		dels = append(dels, node.Remove(it.key, it.since))
	}
	if len(dels) > 0 {
		out.Apply(dels)
		env.Decide(node.Decision{Kind: node.DecisionGraceDeletion, Node: t.address, Detail: fmt.Sprintf("%d deletions passed after their grace period", len(dels)), Attrs: map[string]string{"count": fmt.Sprint(len(dels))}})
	}
}

// handle takes one input event.
func (t *Transform) handle(env node.Env, ev node.Event, out node.Output) {
	if ev.Reset {
		t.reset(env.Now(), ev.Snapshot, out)
	}
	var ups []node.Delta
	for _, d := range ev.Deltas {
		if d.Delete {
			if _, ok := t.passed[d.Key]; ok {
				t.pending.schedule(d.Key, env.Now().Add(t.delay), d.Time) // a new delete restarts the wait
			}
			continue
		}
		// A re-add cancels the pending deletion and passes only when the
		// value changed. Other upserts pass without a comparison: upstream
		// collections emit only changes, and downstream drops no-ops anyway.
		if t.pending.cancel(d.Key) && t.passed[d.Key].v.RawEquals(d.Value) {
			continue
		}
		t.passed[d.Key] = passed{d.Value, d.Origin}
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
// then made equal to what has passed with Replace, which also repairs it
// after a restart.
func (t *Transform) reset(now time.Time, snapshot []node.Record, out node.Output) {
	present := make(map[node.Key]struct{}, len(snapshot))
	for _, r := range snapshot {
		present[r.Key] = struct{}{}
		t.pending.cancel(r.Key)
		t.passed[r.Key] = passed{r.Value, r.Origin}
	}
	records := make([]node.Record, 0, len(t.passed))
	for k, p := range t.passed {
		if _, ok := present[k]; !ok && !t.pending.has(k) {
			t.pending.schedule(k, now.Add(t.delay), now)
		}
		records = append(records, node.Record{Key: k, Value: p.v, Origin: p.o})
	}
	out.Replace(records)
}

// PassesValues implements node.ValuePasser: grace_period compares values
// only with RawEquals, so packed values pass through packed.
func (t *Transform) PassesValues() {}

var (
	_ node.Transform   = (*Transform)(nil)
	_ node.PendingDue  = (*Transform)(nil)
	_ node.ValuePasser = (*Transform)(nil)
)
