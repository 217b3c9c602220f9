package aggregate

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hashicorp/hcl/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/exprmetric"
	"github.com/pipeline/pipeline/schema"
)

// Transform is a built transform "aggregate".
type Transform struct {
	address string
	let     []letItem
	forEach hcl.Expression
	key     hcl.Expression
	value   hcl.Expression // nil: an empty object
	ctx     *hcl.EvalContext
}

// Run evaluates the whole input after each of its events, once it synced.
func (t *Transform) Run(ctx context.Context, env node.Env, in node.Input, out node.Output) error {
	errs := exprmetric.NewErrors()
	if err := env.Metrics.Register(errs); err != nil {
		return fmt.Errorf("%s: register metrics: %w", t.address, err)
	}
	r := &runner{t: t, env: env, errs: errs, in: map[node.Key]cty.Value{}}
	return node.Consume(ctx, in, t.address, func(ev node.Event) { r.handle(ev, out) })
}

// runner is the state of one run: the input as last seen, sorted on demand.
type runner struct {
	t       *Transform
	env     node.Env
	errs    prometheus.Counter
	in      map[node.Key]cty.Value
	sorted  []node.Key // keys of in, sorted; nil when they changed
	synced  bool       // the input synced
	emitted bool       // an evaluation succeeded: the output is synced
	failing bool       // the last evaluation failed as a whole
}

func (r *runner) handle(ev node.Event, out node.Output) {
	if ev.Reset {
		clear(r.in)
		for _, rec := range ev.Snapshot {
			r.in[rec.Key] = rec.Value
		}
		r.sorted = nil
	}
	for _, d := range ev.Deltas {
		_, had := r.in[d.Key]
		if d.Delete {
			delete(r.in, d.Key)
		} else {
			r.in[d.Key] = d.Value
		}
		if had == d.Delete {
			r.sorted = nil
		}
	}
	r.synced = r.synced || ev.Synced
	if !r.synced {
		return
	}
	recs, err := r.evaluate()
	if err != nil {
		r.errs.Inc()
		r.env.Logger.Warn("evaluation failed; previous output kept", "err", err)
		r.failing = true
		r.env.Health.Set(node.Degraded, "evaluation failed; previous output kept: "+err.Error())
		return
	}
	if r.failing {
		r.failing = false
		r.env.Health.Set(node.Healthy, "")
	}
	out.Replace(recs)
	if !r.emitted {
		r.emitted = true
		out.MarkSynced()
	}
}

// records returns the input as the list of { key, value } objects sorted
// by key that expressions see.
func (r *runner) records() cty.Value {
	if r.sorted == nil {
		r.sorted = make([]node.Key, 0, len(r.in))
		for k := range r.in {
			r.sorted = append(r.sorted, k)
		}
		slices.Sort(r.sorted)
	}
	if len(r.sorted) == 0 {
		return cty.EmptyTupleVal
	}
	vs := make([]cty.Value, len(r.sorted))
	for i, k := range r.sorted {
		vs[i] = cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(k), "value": r.in[k]})
	}
	return cty.TupleVal(vs)
}

// evaluate computes the whole output. An error of let or for_each fails
// it; an element whose key or value fails is skipped and counted.
func (r *runner) evaluate() (recs []node.Record, err error) {
	defer func() {
		if p := recover(); p != nil { // a function's bug must not stop the pipeline
			recs, err = nil, fmt.Errorf("expression panicked: %v", p)
		}
	}()
	vars := map[string]cty.Value{"records": r.records()}
	ctx := r.t.ctx.NewChild()
	ctx.Variables = vars
	let := map[string]cty.Value{}
	for _, it := range r.t.let {
		vars["let"] = cty.ObjectVal(let)
		v, diags := it.expr.Value(ctx)
		if diags.HasErrors() {
			return nil, fmt.Errorf("let.%s: %w", it.name, diags)
		}
		let[it.name] = v
	}
	vars["let"] = cty.ObjectVal(let)
	coll, diags := r.t.forEach.Value(ctx)
	if diags.HasErrors() {
		return nil, fmt.Errorf("for_each: %w", diags)
	}
	coll, marks := coll.Unmark()
	if coll.IsNull() {
		return []node.Record{}, nil
	}
	if !coll.IsKnown() || !coll.CanIterateElements() {
		return nil, fmt.Errorf("for_each must be a list, set, map or object, not %s", coll.Type().FriendlyName())
	}
	each := ctx.NewChild()
	eachVars := map[string]cty.Value{}
	each.Variables = eachVars
	at := map[node.Key]int{}
	for it := coll.ElementIterator(); it.Next(); {
		k, v := it.Element()
		if len(marks) > 0 {
			k, v = k.WithMarks(marks), v.WithMarks(marks)
		}
		eachVars["each"] = cty.ObjectVal(map[string]cty.Value{"key": k, "value": v})
		rec, err := r.element(each)
		if errors.Is(err, schema.ErrNoKey) {
			continue
		}
		if err != nil {
			r.errs.Inc()
			r.env.Logger.Warn("expression failed; element skipped", "each", shortText(k), "err", err)
			continue
		}
		if i, ok := at[rec.Key]; ok {
			recs[i] = rec // the last wins
			continue
		}
		at[rec.Key] = len(recs)
		recs = append(recs, rec)
	}
	if recs == nil {
		recs = []node.Record{}
	}
	return recs, nil
}

// element evaluates key and value for one element of for_each.
func (r *runner) element(ctx *hcl.EvalContext) (node.Record, error) {
	kv, diags := r.t.key.Value(ctx)
	if diags.HasErrors() {
		return node.Record{}, diags
	}
	key, err := schema.RecordKey(kv)
	if err != nil {
		return node.Record{}, err
	}
	val := cty.EmptyObjectVal
	if r.t.value != nil {
		v, diags := r.t.value.Value(ctx)
		if diags.HasErrors() {
			return node.Record{}, fmt.Errorf("%s: %w", key, diags)
		}
		if !v.IsWhollyKnown() {
			return node.Record{}, fmt.Errorf("%s: value is not known", key)
		}
		if err := schema.CheckNumbers(v); err != nil {
			return node.Record{}, fmt.Errorf("%s: value: %w", key, err)
		}
		val = v
	}
	return node.Record{Key: key, Value: val}, nil
}

// shortText names an element of for_each in a log line: its key when a
// string or number, else its type.
func shortText(k cty.Value) string {
	k, _ = k.Unmark()
	if k.IsKnown() && !k.IsNull() {
		if s, err := convert.Convert(k, cty.String); err == nil {
			return s.AsString()
		}
	}
	return k.Type().FriendlyName()
}

var _ node.Transform = (*Transform)(nil)
