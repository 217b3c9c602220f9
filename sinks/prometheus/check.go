package prometheus

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/zclconf/go-cty/cty"
	"google.golang.org/protobuf/proto"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// reservedPrefixes are metric name prefixes this program's own metrics use
// on the same /metrics: a family there with another help or type would
// make the whole scrape fail.
var reservedPrefixes = []string{"__", "pipeline_", "go_", "process_", "promhttp_"}

// reservedLabels are label names a series of this sink cannot have:
// node is the sink's address, added to every series; le and quantile
// belong to histograms and summaries.
var reservedLabels = []string{"node", "le", "quantile"}

// checkName checks a family's name and type by Prometheus' conventions:
// the name is valid in the classic character set, carries no reserved
// prefix, and the family passes promlint.
func checkName(name, typ string, labels []string, rng hcl.Range) hcl.Diagnostics {
	bad := func(summary, detail string) hcl.Diagnostics {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()}}
	}
	if !model.LegacyValidation.IsValidMetricName(name) {
		return bad("Invalid metric name", fmt.Sprintf("%q is not a Prometheus metric name: use letters, digits and _ (not first a digit), in snake_case, such as kube_customresource_ready.", name))
	}
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(name, p) {
			return bad("Reserved metric name", fmt.Sprintf("Names starting with %q are reserved (%s): choose a prefix of your own, such as the kind of object the series describe.", p, reservedWhy(p)))
		}
	}
	var diags hcl.Diagnostics
	for _, p := range lint(name, typ, labels) {
		diags = append(diags, bad("Metric name against Prometheus conventions", "promlint: "+p+". "+lintAdvice(p))...)
	}
	return diags
}

func reservedWhy(prefix string) string {
	if prefix == "__" {
		return "Prometheus keeps them for its own use"
	}
	return "this program's own metrics on the same /metrics use them"
}

// lint runs promlint on the family as it would be served (one series with
// every label and node) and returns its problems' texts.
func lint(name, typ string, labels []string) []string {
	mt := dto.MetricType_GAUGE
	if typ == "counter" {
		mt = dto.MetricType_COUNTER
	}
	m := &dto.Metric{Gauge: &dto.Gauge{Value: proto.Float64(1)}}
	if mt == dto.MetricType_COUNTER {
		m = &dto.Metric{Counter: &dto.Counter{Value: proto.Float64(1)}}
	}
	for _, l := range append([]string{"node"}, labels...) {
		m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(l), Value: proto.String("x")})
	}
	mf := &dto.MetricFamily{Name: proto.String(name), Help: proto.String("help"), Type: mt.Enum(), Metric: []*dto.Metric{m}}
	problems, err := promlint.NewWithMetricFamilies([]*dto.MetricFamily{mf}).Lint()
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, p := range problems {
		out = append(out, p.Text)
	}
	return out
}

// lintAdvice says what to write instead, for promlint's usual complaints.
func lintAdvice(problem string) string {
	switch {
	case strings.Contains(problem, `should have "_total" suffix`):
		return "Name a counter NAME_total."
	case strings.Contains(problem, `should not have "_total" suffix`):
		return "Only a counter ends in _total: drop the suffix, or use type = \"counter\" for a value that only goes up."
	case strings.Contains(problem, "base unit"):
		return "Convert the value to the base unit in value (divide by 1000 for milliseconds)."
	case strings.Contains(problem, "abbreviated"):
		return "Write the unit in full: _seconds, _bytes."
	}
	return "See https://prometheus.io/docs/practices/naming/."
}

// checkLabelName checks one label name.
func checkLabelName(name string, rng hcl.Range) hcl.Diagnostics {
	bad := func(summary, detail string) hcl.Diagnostics {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()}}
	}
	switch {
	case !model.LegacyValidation.IsValidLabelName(name):
		return bad("Invalid label name", fmt.Sprintf("%q is not a Prometheus label name: use letters, digits and _ (not first a digit), in snake_case.", name))
	case strings.HasPrefix(name, "__"):
		return bad("Reserved label name", "Label names starting with __ are reserved for Prometheus' own use.")
	case strings.ToLower(name) != name && strings.ContainsAny(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"):
		return bad("Label name against Prometheus conventions", fmt.Sprintf("promlint: label names should be written in 'snake_case' not 'camelCase': write %q.", strings.ToLower(name)))
	}
	for _, r := range reservedLabels {
		if name == r {
			if r == "node" {
				return bad("Reserved label name", "Every series of this sink carries node, the sink's address (sink.prometheus.NAME): name the label otherwise, such as node_name.")
			}
			return bad("Reserved label name", "The label "+r+" belongs to histograms and summaries: name the label otherwise.")
		}
	}
	return nil
}

// checkSensitive refuses labels or a value that read a sensitive variable
// or local: a series is shown to every scraper, so a secret must never
// become one. Records computed from a secret upstream are refused per
// record (Prepare).
func checkSensitive(ctx *hcl.EvalContext, exprs ...hcl.Expression) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, e := range exprs {
		if e == nil {
			continue
		}
		for _, tr := range e.Variables() {
			if root := tr.RootName(); root != "var" && root != "local" {
				continue
			}
			v, d := tr.TraverseAbs(ctx)
			if !d.HasErrors() && !schema.IsSensitive(v) {
				continue
			}
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Sensitive value in a series",
				Detail:  "Series are shown to whoever scrapes /metrics, so a label or value cannot be computed from a sensitive variable or local.",
				Subject: tr.SourceRange().Ptr()})
		}
	}
	return diags
}

// familySchema reads what declares a family from another prometheus
// sink's block.
var familySchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "metric"}, {Name: "type"}, {Name: "help"}, {Name: "labels"}}}

// checkFamily compares fam with every prometheus sink declared before
// this one that adds to the same family: they must agree on type, help
// and label names. Only the later sink reports, at its metric attribute.
func checkFamily(b node.Build, fam family, rng hcl.Range) hcl.Diagnostics {
	for _, nb := range b.Config.Nodes {
		if nb.Kind != node.KindSink || nb.Type != "prometheus" {
			continue
		}
		if nb.Address() == b.Address {
			return nil // only the sinks before this one
		}
		other, ok := familyOf(nb, b.Config.Ctx)
		if !ok || other.name != fam.name {
			continue
		}
		if why := disagree(other, fam); why != "" {
			return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Metric family declared twice",
				Detail: fmt.Sprintf("%s adds to %s too (%s), with %s. Sinks adding to one family must give the same type, help and label names; or name this family otherwise.",
					nb.Address(), fam.name, nb.DeclRange.String(), why),
				Subject: rng.Ptr()}}
		}
	}
	return nil
}

func disagree(a, b family) string {
	switch {
	case a.typ != b.typ:
		return fmt.Sprintf("type %q where this one has %q", a.typ, b.typ)
	case a.help != b.help:
		return fmt.Sprintf("help %q where this one has %q", a.help, b.help)
	case strings.Join(a.labels, ",") != strings.Join(b.labels, ","):
		return fmt.Sprintf("labels [%s] where this one has [%s]", strings.Join(a.labels, ", "), strings.Join(b.labels, ", "))
	}
	return ""
}

// familyOf reads the family another sink's block declares; ok is false
// when the block does not say it plainly (its own diagnostics report that).
func familyOf(nb *schema.NodeBlock, ctx *hcl.EvalContext) (family, bool) {
	c, _, _ := nb.Body.PartialContent(familySchema)
	str := func(name, def string) (string, bool) {
		a := c.Attributes[name]
		if a == nil {
			return def, def != ""
		}
		v, d := a.Expr.Value(ctx)
		if d.HasErrors() || !v.IsWhollyKnown() || v.IsNull() || !v.Type().Equals(cty.String) {
			return "", false
		}
		v, _ = v.Unmark()
		return v.AsString(), true
	}
	var f family
	var ok1, ok2, ok3 bool
	f.name, ok1 = str("metric", "")
	f.typ, ok2 = str("type", "gauge")
	f.help, ok3 = str("help", "")
	if a := c.Attributes["labels"]; a != nil {
		ls, d := labelExprs(a.Expr)
		if d.HasErrors() {
			return f, false
		}
		for _, l := range ls {
			f.labels = append(f.labels, l.name)
		}
	}
	return f, ok1 && ok2 && ok3
}
