package static

import (
	"context"
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

var recordsAttr = schema.Value("records").Required().
	Doc("The records, as a map from key to value. Values may be any type; an object is typical.").
	Example(`{ "10.0.0.0/8" = { network = "internal" }, "192.168.0.0/16" = { network = "office" } }`)

// Spec declares source "static".
func Spec() node.Spec {
	return node.Spec{
		Kind:      node.KindSource,
		Type:      "static",
		Summary:   "Fixed records declared in the configuration.",
		Doc:       "Emits its records once, marks itself synced and keeps them until the configuration changes.",
		Body:      schema.Block{Attrs: []schema.Attribute{recordsAttr}},
		Output:    node.Records,
		NewSource: newSource,
	}
}

// Source is a running static source.
type Source struct {
	records []node.Record
}

func newSource(b node.Build) (node.Source, hcl.Diagnostics) {
	v, rng, diags := recordsAttr.Get(b.Content)
	if diags.HasErrors() {
		return nil, diags
	}
	if !v.Type().IsObjectType() && !v.Type().IsMapType() {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid records",
			Detail: fmt.Sprintf("records must be a map from key to value, not %s.", v.Type().FriendlyName()), Subject: rng.Ptr()}}
	}
	if v.IsMarked() {
		// Marks on the whole map come from a sensitive key: keys are shown
		// in every view, as record identities.
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Sensitive record key",
			Detail:  "A record's key is shown in logs, status and plans, so it cannot be computed from a sensitive value. Use a sensitive value in a record's value instead, where it is masked.",
			Subject: rng.Ptr()}}
	}
	s := &Source{}
	lines := itemLines(b.Content.Attrs[recordsAttr.Name()].Expr, b.Content.Ctx)
	for it := v.ElementIterator(); it.Next(); {
		k, val := it.Element() // val keeps its sensitive marks for the views
		line, ok := lines[k.AsString()]
		if !ok {
			line = rng.Start.Line
		}
		org := &node.Origin{Source: b.Address, File: rng.Filename, Line: line}
		s.records = append(s.records, node.Record{Key: k.AsString(), Value: val, Origin: org})
	}
	sort.Slice(s.records, func(i, j int) bool { return s.records[i].Key < s.records[j].Key })
	return s, nil
}

// Run implements node.Source.
func (s *Source) Run(ctx context.Context, env node.Env, out node.Output) error {
	out.Replace(s.records)
	out.MarkSynced()
	env.Health.Set(node.Healthy, "")
	<-ctx.Done()
	return nil
}

// Records returns the declared records (for tests and plan).
func (s *Source) Records() []node.Record { return s.records }

// KnownRecords implements node.KnownRecords: the compiler checks fan-in
// conflicts between static sources before anything runs.
func (s *Source) KnownRecords() []node.Record { return s.records }

// itemLines maps each key of an object constructor ({ "10.0.0.0/8" = ... })
// to the line it is written on, so a record's origin points at its own
// line. Keys it cannot evaluate alone are left out (the attribute's line
// is used).
func itemLines(expr hcl.Expression, ctx *hcl.EvalContext) map[string]int {
	lines := map[string]int{}
	obj, ok := expr.(*hclsyntax.ObjectConsExpr)
	if !ok {
		return lines
	}
	for _, item := range obj.Items {
		k, diags := item.KeyExpr.Value(ctx)
		if diags.HasErrors() || !k.IsKnown() || k.IsNull() {
			continue
		}
		k, _ = k.Unmark()
		if k, err := convert.Convert(k, cty.String); err == nil {
			lines[k.AsString()] = item.KeyExpr.Range().Start.Line
		}
	}
	return lines
}

var (
	_ node.Source       = (*Source)(nil)
	_ node.KnownRecords = (*Source)(nil)
)
