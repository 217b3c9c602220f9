package planview

import (
	"fmt"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/cmd/pipeline/view"
	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/plan"
	"github.com/pipeline/pipeline/internal/redact"
	"github.com/pipeline/pipeline/schema"
)

// Mask returns p with every secret masked in keys, values, origins,
// locations and warnings, so no view can print one.
func Mask(p *plan.PlanResult, secrets *redact.Redactor) *Plan {
	out := &Plan{PlanResult: *p}
	if secrets.Empty() {
		return out
	}
	out.Sinks = make([]plan.SinkPlan, len(p.Sinks))
	for i, s := range p.Sinks {
		s.Target.Location = secrets.String(s.Target.Location)
		changes := make([]plan.PlannedChange, len(s.Changes))
		for j, c := range s.Changes {
			before, after := secrets.String(c.Before), secrets.String(c.After)
			mk := secrets.String(c.Key)
			if before != c.Before || after != c.After || mk != c.Key {
				out.sensitive(s.Address, mk)
			}
			c.Old.Value, c.New.Value = maskEntryValue(secrets, c.Old), maskEntryValue(secrets, c.New)
			if before != c.Before || after != c.After {
				// The shown value held a secret: its encoded form (a map
				// value's hex) would show it too.
				c.Old.Value, c.New.Value = maskWhole(c.Old.Value), maskWhole(c.New.Value)
			}
			c.Before, c.After, c.Key = before, after, mk
			origins := make([]string, len(c.Origins))
			for k, o := range c.Origins {
				origins[k] = secrets.String(o)
			}
			c.Origins = origins
			changes[j] = c
		}
		s.Changes = changes
		pending := make([]node.PendingDeletion, len(s.Pending))
		for k, pd := range s.Pending {
			pending[k] = node.PendingDeletion{Key: secrets.String(pd.Key), Due: pd.Due}
		}
		s.Pending = pending
		for k := range s.Skipped {
			s.Skipped[k].Key, s.Skipped[k].Err = secrets.String(s.Skipped[k].Key), secrets.String(s.Skipped[k].Err)
		}
		if s.File != nil {
			f := *s.File
			f.Path, f.Diff = secrets.String(f.Path), secrets.String(f.Diff)
			s.File = &f
		}
		out.Sinks[i] = s
	}
	out.Warnings = make([]plan.PlanWarning, len(p.Warnings))
	for i, w := range p.Warnings {
		out.Warnings[i] = plan.PlanWarning{Address: w.Address, Message: secrets.String(w.Message)}
	}
	return out
}

// Plan is a plan whose secrets are masked, with the changes that
// held one marked.
type Plan struct {
	plan.PlanResult
	masked map[string]bool // address + "\x00" + key
	Reload *Reload         // --against: the node diff of a reload
}

func (m *Plan) sensitive(addr, key string) {
	if m.masked == nil {
		m.masked = map[string]bool{}
	}
	m.masked[addr+"\x00"+key] = true
}

func (m *Plan) isSensitive(addr, key string) bool { return m.masked[addr+"\x00"+key] }

// planSummary is the one-line count that ends a text plan; with
// --against it counts the nodes the reload would rebuild, add and remove
// too, which plan's exit status 2 stands for even when no entry changes.
func planSummary(p *plan.PlanResult, rp *Reload) string {
	s := entrySummary(p)
	if rp == nil || !rp.Diff.Changed() {
		return s
	}
	c := rp.Diff.Count()
	nodes := fmt.Sprintf("The reload would rebuild %s, add %s and remove %s.", view.Plural(c[graph.Rebuilt], "node"),
		view.Plural(c[graph.Added], "node"), view.Plural(c[graph.Removed], "node"))
	if strings.HasPrefix(s, "No changes.") {
		return "No changes to the targets' entries. " + nodes + strings.TrimPrefix(s, "No changes. Every target already holds what the sources say.")
	}
	return s + " " + nodes
}

func entrySummary(p *plan.PlanResult) string {
	a, c, r := p.Counts()
	emit := ""
	if e := p.Emits(); e > 0 {
		emit = fmt.Sprintf(" The initial sync would emit %d records to append-only sinks.", e)
	}
	replace := ""
	if n := Replacements(p); n > 0 {
		replace = fmt.Sprintf("%d to replace, ", n)
	}
	if a+c+r == 0 && replace == "" {
		return "No changes. Every target already holds what the sources say." + emit
	}
	return fmt.Sprintf("Plan: %s%d to add, %d to change, %d to remove.", replace, a, c, r) + emit
}

// Replacements counts the targets run would replace (must be replaced).
func Replacements(p *plan.PlanResult) int {
	n := 0
	for _, s := range p.Sinks {
		if s.Target.Replace != "" {
			n++
		}
	}
	return n
}

func maskWhole(v cty.Value) cty.Value {
	if v == cty.NilVal {
		return v
	}
	return cty.StringVal(schema.Mask)
}

func maskEntryValue(secrets *redact.Redactor, e node.Entry) cty.Value {
	if e.Value == cty.NilVal {
		return e.Value
	}
	return secrets.Value(schema.Masked(e.Value))
}
