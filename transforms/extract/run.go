package extract

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/pipeline/pipeline/engine/node"
)

// Transform is a configured extract transform.
type Transform struct {
	address                    string
	ctx                        *hcl.EvalContext
	where, forEach, key, value hcl.Expression
}

var _ node.Transform = (*Transform)(nil)

// state maps input objects to the records they yield and back.
type state struct {
	byObject map[node.Key]map[node.Key]cty.Value // object key -> record key -> value
	byRecord map[node.Key]map[node.Key]struct{}  // record key -> object keys yielding it
}

func newState() *state {
	return &state{byObject: map[node.Key]map[node.Key]cty.Value{}, byRecord: map[node.Key]map[node.Key]struct{}{}}
}

// Run implements node.Transform.
func (t *Transform) Run(ctx context.Context, env node.Env, in node.Input, out node.Output) error {
	errs := prometheus.NewCounter(prometheus.CounterOpts{Name: "pipeline_transform_expression_errors_total",
		Help: "Input records whose expressions failed; they yield nothing."})
	if err := env.Metrics.Register(errs); err != nil {
		return fmt.Errorf("%s: register metrics: %w", t.address, err)
	}
	r := &runner{t: t, env: env, errs: errs, st: newState()}
	for {
		ev, err := in.Next(ctx)
		if err != nil {
			return nil
		}
		if ev.Reset {
			r.st = newState()
			for _, rec := range ev.Snapshot {
				r.set(rec.Key, rec.Value, nil)
			}
			out.Replace(r.st.records())
		}
		if len(ev.Deltas) > 0 {
			touched := map[node.Key]struct{}{}
			for _, d := range ev.Deltas {
				if d.Delete {
					r.drop(d.Key, touched)
				} else {
					r.set(d.Key, d.Value, touched)
				}
			}
			out.Apply(r.st.deltas(ev.Deltas, touched))
		}
		if ev.Synced {
			out.MarkSynced()
		}
	}
}

type runner struct {
	t    *Transform
	env  node.Env
	errs prometheus.Counter
	st   *state
}

// set replaces what object k yields.
func (r *runner) set(k node.Key, obj cty.Value, touched map[node.Key]struct{}) {
	recs, err := r.t.eval(obj)
	if err != nil {
		r.errs.Inc()
		r.env.Logger.Warn("expression failed; object yields nothing", "key", k, "err", err)
		recs = nil
	}
	r.drop(k, touched)
	if len(recs) == 0 {
		return
	}
	r.st.byObject[k] = recs
	for rk := range recs {
		owners := r.st.byRecord[rk]
		if owners == nil {
			owners = map[node.Key]struct{}{}
			r.st.byRecord[rk] = owners
		}
		owners[k] = struct{}{}
		if touched != nil {
			touched[rk] = struct{}{}
		}
	}
}

// drop forgets what object k yielded.
func (r *runner) drop(k node.Key, touched map[node.Key]struct{}) {
	for rk := range r.st.byObject[k] {
		owners := r.st.byRecord[rk]
		delete(owners, k)
		if len(owners) == 0 {
			delete(r.st.byRecord, rk)
		}
		if touched != nil {
			touched[rk] = struct{}{}
		}
	}
	delete(r.st.byObject, k)
}

// value is the record's value: from the smallest object key yielding it.
func (s *state) value(rk node.Key) (cty.Value, bool) {
	owners := s.byRecord[rk]
	if len(owners) == 0 {
		return cty.NilVal, false
	}
	first := ""
	for ok := range owners {
		if first == "" || ok < first {
			first = ok
		}
	}
	return s.byObject[first][rk], true
}

func (s *state) records() []node.Record {
	out := make([]node.Record, 0, len(s.byRecord))
	for rk := range s.byRecord {
		v, _ := s.value(rk)
		out = append(out, node.Record{Key: rk, Value: v})
	}
	return out
}

// deltas turns touched record keys into deltas, carrying the receipt time
// of the newest input delta.
func (s *state) deltas(in []node.Delta, touched map[node.Key]struct{}) []node.Delta {
	t := in[len(in)-1].Time
	keys := make([]node.Key, 0, len(touched))
	for rk := range touched {
		keys = append(keys, rk)
	}
	sort.Strings(keys)
	out := make([]node.Delta, 0, len(keys))
	for _, rk := range keys {
		if v, ok := s.value(rk); ok {
			out = append(out, node.Upsert(rk, v, t))
		} else {
			out = append(out, node.Remove(rk, t))
		}
	}
	return out
}

var errSkip = errors.New("skip")

// eval runs the expressions for one object.
func (t *Transform) eval(obj cty.Value) (map[node.Key]cty.Value, error) {
	ctx := t.ctx.NewChild()
	ctx.Variables = map[string]cty.Value{"object": obj}
	if t.where != nil {
		ok, err := evalBool(t.where, ctx)
		if err != nil || !ok {
			return nil, err
		}
	}
	out := map[node.Key]cty.Value{}
	if t.forEach == nil {
		return out, t.record(ctx, out)
	}
	coll, diags := t.forEach.Value(ctx)
	if diags.HasErrors() {
		return nil, diags
	}
	if coll.IsNull() {
		return out, nil
	}
	if !coll.CanIterateElements() || !coll.IsWhollyKnown() {
		return nil, fmt.Errorf("for_each must be a list or a map, not %s", coll.Type().FriendlyName())
	}
	for it := coll.ElementIterator(); it.Next(); {
		k, v := it.Element()
		each := ctx.NewChild()
		each.Variables = map[string]cty.Value{"each": cty.ObjectVal(map[string]cty.Value{"key": k, "value": v})}
		if err := t.record(each, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (t *Transform) record(ctx *hcl.EvalContext, out map[node.Key]cty.Value) error {
	kv, diags := t.key.Value(ctx)
	if diags.HasErrors() {
		return diags
	}
	key, err := keyString(kv)
	if errors.Is(err, errSkip) {
		return nil
	}
	if err != nil {
		return err
	}
	val := cty.EmptyObjectVal
	if t.value != nil {
		v, diags := t.value.Value(ctx)
		if diags.HasErrors() {
			return diags
		}
		if !v.IsWhollyKnown() {
			return errors.New("value is not known")
		}
		val = v
	}
	out[key] = val
	return nil
}

func keyString(v cty.Value) (string, error) {
	if v.IsNull() {
		return "", errSkip
	}
	if !v.IsKnown() {
		return "", errors.New("key is not known")
	}
	if v.Type() == cty.Number {
		bf := v.AsBigFloat()
		if i, acc := bf.Int64(); acc == big.Exact {
			return fmt.Sprint(i), nil
		}
	}
	s, err := convert.Convert(v, cty.String)
	if err != nil {
		return "", fmt.Errorf("key must be a string, not %s", v.Type().FriendlyName())
	}
	if s.AsString() == "" {
		return "", errSkip
	}
	return s.AsString(), nil
}

func evalBool(e hcl.Expression, ctx *hcl.EvalContext) (bool, error) {
	v, diags := e.Value(ctx)
	if diags.HasErrors() {
		return false, diags
	}
	if v.IsNull() {
		return false, nil
	}
	b, err := convert.Convert(v, cty.Bool)
	if err != nil || !b.IsKnown() {
		return false, fmt.Errorf("where must be a bool, not %s", v.Type().FriendlyName())
	}
	return b.True(), nil
}
