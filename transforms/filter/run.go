package filter

import (
	"context"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/exprmetric"
	"github.com/pipeline/pipeline/internal/fastexpr"
)

// Transform is a configured filter.
type Transform struct {
	address string
	where   hcl.Expression
	ctx     *hcl.EvalContext
}

// Run implements node.Transform.
func (t *Transform) Run(ctx context.Context, env node.Env, in node.Input, out node.Output) error {
	r, err := t.newRunner(env)
	if err != nil {
		return err
	}
	return node.Consume(ctx, in, t.address, func(ev node.Event) { r.handle(ev, out) })
}

// runner is the state of one Run; it belongs to Run's goroutine.
type runner struct {
	t     *Transform
	env   node.Env
	errs  prometheus.Counter
	ctx   *hcl.EvalContext // reused: record is rebound per evaluation
	vars  map[string]cty.Value
	where *fastexpr.Expr // t.where with its fast path
}

func (t *Transform) newRunner(env node.Env) (*runner, error) {
	r := &runner{t: t, env: env, vars: map[string]cty.Value{}, where: fastexpr.Compile(t.where, t.ctx),
		errs: exprmetric.NewErrors(),
	}
	if err := env.Metrics.Register(r.errs); err != nil {
		return nil, fmt.Errorf("%s: register metrics: %w", t.address, err)
	}
	r.ctx = t.ctx.NewChild()
	r.ctx.Variables = r.vars
	return r, nil
}

// handle filters one event.
func (r *runner) handle(ev node.Event, out node.Output) {
	if ev.Reset {
		kept := make([]node.Record, 0, len(ev.Snapshot))
		for _, rec := range ev.Snapshot {
			if r.keep(rec.Key, rec.Value) {
				kept = append(kept, rec)
			}
		}
		out.Replace(kept)
	}
	if len(ev.Deltas) > 0 {
		deltas := make([]node.Delta, 0, len(ev.Deltas))
		for _, d := range ev.Deltas {
			if !d.Delete && !r.keep(d.Key, d.Value) {
				d = node.Remove(d.Key, d.Time) // it may have passed before
			}
			deltas = append(deltas, d)
		}
		out.Apply(deltas)
	}
	if ev.Synced {
		out.MarkSynced()
	}
}

// keep evaluates the condition for one record; an error drops it.
func (r *runner) keep(k node.Key, v cty.Value) bool {
	ok, err := r.eval(k, v)
	if err != nil {
		r.errs.Inc()
		r.env.Logger.Warn("expression failed; record dropped", "key", k, "err", err)
	}
	return ok
}

func (r *runner) eval(k node.Key, v cty.Value) (ok bool, err error) {
	defer func() {
		if p := recover(); p != nil { // a function's bug must not stop the pipeline
			ok, err = false, fmt.Errorf("expression panicked: %v", p)
		}
	}()
	r.vars["record"] = cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(k), "value": v})
	res, diags := r.where.Value(r.ctx)
	if diags.HasErrors() {
		return false, diags
	}
	res, _ = res.Unmark()
	if res.IsNull() {
		return false, nil
	}
	b, cerr := convert.Convert(res, cty.Bool)
	if cerr != nil || !b.IsKnown() {
		return false, fmt.Errorf("where must be a bool, not %s", res.Type().FriendlyName())
	}
	return b.True(), nil
}

var _ node.Transform = (*Transform)(nil)
