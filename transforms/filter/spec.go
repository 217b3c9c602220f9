package filter

import (
	"context"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

var whereAttr = schema.Expr("where", "record").Required().
	Doc("Condition on the record; records for which it is false (or null) are dropped. An expression error drops the record, logs it and counts it in pipeline_transform_expression_errors_total.").
	Example(`record.value.namespace != "kube-system"`)

// Spec declares transform "filter".
func Spec() node.Spec {
	return node.Spec{
		Kind:    node.KindTransform,
		Type:    "filter",
		Summary: "Keeps the records for which an expression is true.",
		Body:    schema.Block{Attrs: []schema.Attribute{whereAttr}},
		Output:  node.SameAsInput,
		New: func(b node.Build) (any, hcl.Diagnostics) {
			e, _, diags := whereAttr.Get(b.Content)
			return &Transform{address: b.Address, where: e, ctx: b.Content.Ctx}, diags
		},
	}
}

// Transform is a configured filter.
type Transform struct {
	address string
	where   hcl.Expression
	ctx     *hcl.EvalContext
}

var _ node.Transform = (*Transform)(nil)

// Run implements node.Transform.
func (t *Transform) Run(ctx context.Context, env node.Env, in node.Input, out node.Output) error {
	errs := prometheus.NewCounter(prometheus.CounterOpts{Name: "pipeline_transform_expression_errors_total",
		Help: "Input records whose expressions failed; they yield nothing."})
	if err := env.Metrics.Register(errs); err != nil {
		return fmt.Errorf("%s: register metrics: %w", t.address, err)
	}
	keep := func(r node.Record) bool {
		ok, err := t.keep(r)
		if err != nil {
			errs.Inc()
			env.Logger.Warn("expression failed; record dropped", "key", r.Key, "err", err)
		}
		return ok
	}
	for {
		ev, err := in.Next(ctx)
		if err != nil {
			return nil
		}
		if ev.Reset {
			var kept []node.Record
			for _, r := range ev.Snapshot {
				if keep(r) {
					kept = append(kept, r)
				}
			}
			out.Replace(kept)
		}
		if len(ev.Deltas) > 0 {
			deltas := make([]node.Delta, 0, len(ev.Deltas))
			for _, d := range ev.Deltas {
				if !d.Delete && !keep(node.Record{Key: d.Key, Value: d.Value}) {
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
}

func (t *Transform) keep(r node.Record) (bool, error) {
	ctx := t.ctx.NewChild()
	ctx.Variables = map[string]cty.Value{"record": cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(r.Key), "value": r.Value})}
	v, diags := t.where.Value(ctx)
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
