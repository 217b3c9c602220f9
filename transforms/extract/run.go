package extract

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/exprmetric"
)

// Transform is a configured extract transform.
type Transform struct {
	address                    string
	ctx                        *hcl.EvalContext // the config's context plus jsonpath()
	where, forEach, key, value hcl.Expression   // nil when absent
	usesRecord                 bool             // an expression refers to record: build it per object
}

// Run implements node.Transform. It keeps, for every input object, the
// record keys it yields and, for every record key, the objects yielding it.
func (t *Transform) Run(ctx context.Context, env node.Env, in node.Input, out node.Output) error {
	r, err := t.newRunner(env)
	if err != nil {
		return err
	}
	return node.Consume(ctx, in, t.address, func(ev node.Event) { r.handle(ev, out) })
}

// change is a record key touched by the current event, with its value
// before the event.
type change struct {
	key    node.Key
	before cty.Value
	had    bool
	at     time.Time // Time of the last input delta that touched the key
}

// runner is the state of one Run; it belongs to Run's goroutine.
type runner struct {
	t       *Transform
	env     node.Env
	ev      *evaluator
	idx     *index
	errs    prometheus.Counter
	skips   prometheus.Counter
	failing map[node.Key]struct{} // objects whose last evaluation failed (warned once)

	// Per-event scratch, reused between events.
	changes []change
	pos     map[node.Key]int // record key -> index in changes
	at      time.Time        // Time of the input delta being applied
	touchFn func(node.Key)
}

func (t *Transform) newRunner(env node.Env) (*runner, error) {
	r := &runner{t: t, env: env, ev: newEvaluator(t), idx: newIndex(0), failing: map[node.Key]struct{}{}, pos: map[node.Key]int{},
		errs: exprmetric.NewErrors(),
		skips: prometheus.NewCounter(prometheus.CounterOpts{Name: "pipeline_transform_skipped_records_total",
			Help: "Records skipped because their key was null or empty."}),
	}
	r.touchFn = r.touch
	for _, c := range []prometheus.Collector{r.errs, r.skips} {
		if err := env.Metrics.Register(c); err != nil {
			return nil, fmt.Errorf("%s: register metrics: %w", t.address, err)
		}
	}
	return r, nil
}

// handle applies one input event and publishes its consequences.
func (r *runner) handle(ev node.Event, out node.Output) {
	if ev.Reset {
		r.reset(ev.Snapshot)
		out.Replace(r.idx.records())
	}
	if len(ev.Deltas) > 0 {
		if ds := r.apply(ev.Deltas); len(ds) > 0 {
			out.Apply(ds)
		}
	}
	if ev.Synced {
		out.MarkSynced()
	}
}

// reset rebuilds the whole state from a snapshot.
func (r *runner) reset(snapshot []node.Record) {
	r.idx = newIndex(len(snapshot))
	failing := r.failing
	r.failing = make(map[node.Key]struct{}, len(failing))
	for _, rec := range snapshot {
		if _, ok := failing[rec.Key]; ok {
			r.failing[rec.Key] = struct{}{} // warned already
		}
		r.idx.set(rec.Key, r.yields(rec.Key, rec.Value), rec.Origin, noTouch)
	}
}

func noTouch(node.Key) {}

// apply applies a batch of input deltas and returns the deltas of the
// records whose existence or value changed, in the order first touched.
func (r *runner) apply(deltas []node.Delta) []node.Delta {
	r.changes = r.changes[:0]
	clear(r.pos)
	for _, d := range deltas {
		r.at = d.Time
		if d.Delete {
			delete(r.failing, d.Key)
			r.idx.drop(d.Key, r.touchFn)
		} else {
			r.idx.set(d.Key, r.yields(d.Key, d.Value), d.Origin, r.touchFn)
		}
	}
	var out []node.Delta
	for i := range r.changes {
		c := &r.changes[i]
		v, ok := r.idx.value(c.key)
		switch {
		case ok && (!c.had || !v.RawEquals(c.before)):
			d := node.Upsert(c.key, v, c.at)
			d.Origin = r.idx.origin(c.key)
			out = append(out, d)
		case !ok && c.had:
			out = append(out, node.Remove(c.key, c.at))
		}
		c.before = cty.NilVal // release the value
	}
	return out
}

// touch records a record key's value before its first change in this event.
func (r *runner) touch(rk node.Key) {
	if i, ok := r.pos[rk]; ok {
		r.changes[i].at = r.at
		return
	}
	v, had := r.idx.value(rk)
	r.pos[rk] = len(r.changes)
	r.changes = append(r.changes, change{key: rk, before: v, had: had, at: r.at})
}

// yields evaluates one object, counting and logging failures. The object
// comes as its producer emitted it (node.PackedInput) and is built, if at
// all, by the evaluator, one at a time, so a snapshot's objects are
// garbage once evaluated.
func (r *runner) yields(k node.Key, obj cty.Value) []yield {
	ys, err := r.ev.eval(k, obj)
	if n := r.ev.skipped; n > 0 {
		r.ev.skipped = 0
		r.skips.Add(float64(n))
		r.env.Logger.Debug("null or empty key; record skipped", "key", k, "skipped", n)
	}
	if err == nil {
		delete(r.failing, k)
		return ys
	}
	r.errs.Inc()
	if _, ok := r.failing[k]; ok {
		r.env.Logger.Debug("expression failed again; object yields nothing", "key", k, "err", err)
	} else {
		r.failing[k] = struct{}{}
		r.env.Logger.Warn("expression failed; object yields nothing", "key", k, "err", err)
	}
	return nil
}

// TakesPacked implements node.PackedInput: yields builds each object.
func (t *Transform) TakesPacked() {}

var (
	_ node.Transform   = (*Transform)(nil)
	_ node.PackedInput = (*Transform)(nil)
)
