package prometheus

import (
	"slices"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// DefaultMaxSeries bounds the series one sink serves unless max_series says
// otherwise: enough for a cluster's custom resources, small enough that a
// label computed from a record by mistake (a uid, an IP) cannot flood the
// scrape.
const DefaultMaxSeries = 10000

var (
	metricAttr = schema.String("metric").Required().
			Doc("Name of the metric family every record's series belongs to. It follows Prometheus' naming conventions (checked at load, as promlint does): snake_case, a base unit as suffix (`_seconds`, `_bytes`), `_total` for a counter and only for a counter, no `:` and no reserved prefix (`__`, and `pipeline_`, `go_`, `process_`, `promhttp_`, which this program's own metrics use).").
			Example(`"kube_customresource_ready"`)
	typeAttr = schema.Enum("type", "gauge", "counter").Default("gauge", `"gauge"`).
			Doc("Metric type: \"gauge\", or \"counter\" where each record carries a value that only goes up (a count the object keeps); a counter's value below 0 is skipped.")
	helpAttr = schema.String("help").Required().
			Doc("The family's HELP text. Sinks that add to one family must give the same help, type and label names.").
			Example(`"Whether the custom resource's Ready condition is True."`)
	labelsAttr = schema.Expr("labels", "record").
			Doc("The series' labels: an object whose keys are the label names (fixed in the configuration, checked at load) and whose values are expressions of the record (`record.key`, `record.value`), converted to strings; null is the empty value. Two records of one sink giving the same labels are one series: the second is refused until the first goes. The label `node` is added to every series (the sink's address) and cannot be given here. A label computed from a sensitive value is refused.").
			Example(`{ namespace = record.value.metadata.namespace, name = record.value.metadata.name }`)
	valueAttr = schema.Expr("value", "record").Required().
			Doc("The series' value, an expression of the record: a number, a bool (true is 1, false is 0) or a string holding a number. A record whose value is none of these, or not a finite number, is skipped: its series is not served, the skip is counted in pipeline_sink_prometheus_skipped_total and logged, and `pipeline explain` shows the key as skipped.").
			Example(`record.value.status == "True" ? 1 : 0`)
	maxSeriesAttr = schema.Int("max_series").Default(DefaultMaxSeries, "10000").
			Doc("Most series the sink serves. Beyond it a new series is refused (the record's entry fails and is retried), the sink shows degraded on /readyz with the number refused, and the refusals are counted in pipeline_sink_prometheus_refused_total{reason=\"max_series\"}; series already served stay.")
)

// Spec declares sink "prometheus".
func Spec() node.Spec {
	return node.Spec{
		Kind:    node.KindSink,
		Type:    "prometheus",
		Summary: "Serves each record as one Prometheus series on the instance's /metrics.",
		Doc: "Each record becomes one series of the family `metric`, with the labels `labels` computes and the value `value` computes, " +
			"plus the label `node` (the sink's address). The series are served on the `/metrics` of the admin endpoint (`--listen`), " +
			"next to the engine's metrics. The target is what the process serves: a record removed removes its series, and a " +
			"restarted process serves exactly what the records say. Names and label names are checked at load; `pipeline plan` " +
			"and `pipeline explain` show each record's series; a config test can expect the exposition with `content` or `contains`. " +
			"See docs/metrics-sink.md.",
		Body:    schema.Block{Attrs: []schema.Attribute{metricAttr, typeAttr, helpAttr, labelsAttr, valueAttr, maxSeriesAttr}},
		NewSink: newSink,
	}
}

// Sink is a configured prometheus sink: one family and how a record
// becomes a series of it. It holds no series; its Target does.
type Sink struct {
	address   string
	fam       family
	labels    []labelExpr // sorted by name
	value     hcl.Expression
	ctx       *hcl.EvalContext
	maxSeries int
}

// family is what declares a metric family: sinks adding to one family
// must agree on all of it.
type family struct {
	name   string
	typ    string // "gauge" or "counter"
	help   string
	labels []string // sorted
}

// labelExpr is one label: its name and the expression of its value.
type labelExpr struct {
	name string
	expr hcl.Expression
}

func newSink(b node.Build) (node.Sink, hcl.Diagnostics) {
	s := &Sink{address: b.Address, ctx: b.Content.Ctx}
	var diags hcl.Diagnostics
	name, nameRange, d := metricAttr.Get(b.Content)
	diags = append(diags, d...)
	typ := typeAttr.Read(b.Content, &diags)
	help, helpRange, d := helpAttr.Get(b.Content)
	diags = append(diags, d...)
	labels := labelsAttr.Read(b.Content, &diags)
	s.value = valueAttr.Read(b.Content, &diags)
	limit, limitRange, d := maxSeriesAttr.Get(b.Content)
	diags = append(diags, d...)
	if !d.HasErrors() && (limit < 1 || limit > 10_000_000) {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Value out of range",
			Detail: "max_series must be between 1 and 10000000.", Subject: limitRange.Ptr()})
	}
	s.maxSeries = int(limit)
	if labels != nil {
		var ld hcl.Diagnostics
		s.labels, ld = labelExprs(labels)
		diags = append(diags, ld...)
	}
	s.fam = family{name: name, typ: typ, help: help}
	for _, l := range s.labels {
		s.fam.labels = append(s.fam.labels, l.name)
	}
	decoded := !diags.HasErrors()
	if help == "" && helpAttr.Has(b.Content) {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Empty help",
			Detail: "Say in help what the series measure: Prometheus and its users show it beside the metric.", Subject: helpRange.Ptr()})
	}
	if name != "" {
		diags = append(diags, checkName(name, typ, s.fam.labels, nameRange)...)
	}
	diags = append(diags, checkSensitive(b.Content.Ctx, labels, s.value)...)
	if b.Config != nil && decoded {
		diags = append(diags, checkFamily(b, s.fam, nameRange)...)
	}
	return s, diags
}

// labelExprs reads labels, which must be an object whose keys are fixed
// names: the family's label names are known at load.
func labelExprs(expr hcl.Expression) ([]labelExpr, hcl.Diagnostics) {
	pairs, diags := hcl.ExprMap(expr)
	if diags.HasErrors() {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid labels",
			Detail:  "Give labels as an object with fixed label names, such as { namespace = record.value.metadata.namespace }: the family's label names must be known when the configuration loads.",
			Subject: expr.Range().Ptr()}}
	}
	var out []labelExpr
	seen := map[string]hcl.Range{}
	for _, p := range pairs {
		k, d := p.Key.Value(nil)
		if d.HasErrors() || k.Type() != cty.String || k.IsNull() {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid label name",
				Detail:  "A label name is written as it is (namespace = …), not computed: the family's label names must be known when the configuration loads.",
				Subject: p.Key.Range().Ptr()})
			continue
		}
		name := k.AsString()
		if first, dup := seen[name]; dup {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate label",
				Detail: "The label " + name + " is given already at " + first.String() + ".", Subject: p.Key.Range().Ptr()})
			continue
		}
		seen[name] = p.Key.Range()
		diags = append(diags, checkLabelName(name, p.Key.Range())...)
		out = append(out, labelExpr{name: name, expr: p.Value})
	}
	slices.SortFunc(out, func(a, b labelExpr) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	return out, diags
}

var _ node.Sink = (*Sink)(nil)
