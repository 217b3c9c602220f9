package planview

import (
	"io"

	"github.com/pipeline/pipeline/cmd/pipeline/view"
	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/plan"
	"github.com/pipeline/pipeline/engine/reconcile"
	"github.com/pipeline/pipeline/internal/ctyconv"
	"github.com/pipeline/pipeline/schema"
)

// planFormatVersion is the version of the --json document (docs/plan.md):
// a minor bump only adds fields, a major bump means readers must reject.
const planFormatVersion = "1.5"

// JSON is the machine view: the whole plan, every change included.
type JSON struct{}

type planDoc struct {
	FormatVersion string               `json:"format_version"`
	Sources       []engine.SourceState `json:"sources"`
	Sinks         []sinkDoc            `json:"sinks"`
	Warnings      []warningDoc         `json:"warnings"`
	Summary       summaryDoc           `json:"summary"`
	// Reload is present with --against only.
	Reload *ReloadDoc `json:"reload,omitempty"`
}

type sinkDoc struct {
	Address    string          `json:"address"`
	Type       string          `json:"type"`
	Target     node.TargetInfo `json:"target"`
	AppendOnly bool            `json:"append_only"`
	Prune      bool            `json:"prune"`
	Held       int             `json:"held"`
	Desired    int             `json:"desired"`
	Kept       int             `json:"kept"`
	Capacity   *capacityDoc    `json:"capacity,omitempty"`
	Changes    []changeDoc     `json:"changes"`
	Skipped    []skippedDoc    `json:"skipped"`
	// PendingDeletions are the deletions grace periods upstream hold back.
	PendingDeletions []pendingDoc `json:"pending_deletions"`
	// File is the rendered file's diff, for a sink that renders one.
	File *node.FilePlan `json:"file,omitempty"`
	// DeletesHeld counts the deletes the deletion brake would hold, and
	// Brake says why.
	DeletesHeld int    `json:"deletes_held,omitempty"`
	Brake       string `json:"brake,omitempty"`
}

type capacityDoc struct {
	MaxEntries int     `json:"max_entries"`
	Projected  int     `json:"projected"`
	Ratio      float64 `json:"ratio"`
	Fits       bool    `json:"fits"`
}

type changeDoc struct {
	Action    string   `json:"action"`
	Key       string   `json:"key"`
	Before    any      `json:"before"`
	After     any      `json:"after"`
	Shown     shownDoc `json:"shown"`
	Origins   []string `json:"origins"`
	Sensitive bool     `json:"sensitive"`
	// Detail and DryRunError are what the target's backend says the
	// change would do or why it would fail (a Kubernetes dry run).
	Detail      []string `json:"detail,omitempty"`
	DryRunError string   `json:"dry_run_error,omitempty"`
	// Refused says why run would refuse the change (what it would write
	// over exists and is not the sink's); Adopts why what it would take
	// over with adopt = true is not the sink's now.
	Refused string `json:"refused,omitempty"`
	Adopts  string `json:"adopts,omitempty"`
	// Held is set on a delete the deletion brake would hold.
	Held bool `json:"held,omitempty"`
}

// shownDoc holds the values as the target shows them (a map's u32 in
// decimal where before/after hold the hex of its bytes).
type shownDoc struct {
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
}

type skippedDoc struct {
	Key   string `json:"key"`
	Error string `json:"error"`
}

type warningDoc struct {
	Address string `json:"address"`
	Message string `json:"message"`
}

type summaryDoc struct {
	Add    int `json:"add"`
	Change int `json:"change"`
	Remove int `json:"remove"`
	// Emit counts what append-only sinks would receive; it does not make
	// the exit status 2.
	Emit int `json:"emit"`
}

// Write writes p as the --json document.
func (JSON) Write(w io.Writer, p *Plan) error {
	doc := planDoc{FormatVersion: planFormatVersion, Sources: p.Sources, Sinks: []sinkDoc{}, Warnings: []warningDoc{}}
	if doc.Sources == nil {
		doc.Sources = []engine.SourceState{}
	}
	for _, s := range p.Sinks {
		doc.Sinks = append(doc.Sinks, sinkJSON(p, &s))
	}
	for _, wn := range p.Warnings {
		doc.Warnings = append(doc.Warnings, warningDoc(wn))
	}
	doc.Summary.Add, doc.Summary.Change, doc.Summary.Remove = p.Counts()
	doc.Summary.Emit = p.Emits()
	doc.Reload = ReloadJSON(p.Reload)
	return view.WriteJSON(w, doc)
}

func sinkJSON(p *Plan, s *plan.SinkPlan) sinkDoc {
	d := sinkDoc{Address: s.Address, Type: s.Type, Target: s.Target, AppendOnly: s.AppendOnly, Prune: s.Prune,
		Held: s.Actual, Desired: s.Desired, Kept: s.Kept, Changes: make([]changeDoc, 0, len(s.Changes)),
		Skipped: []skippedDoc{}, PendingDeletions: []pendingDoc{}, File: s.File,
		DeletesHeld: s.DeletesBraked, Brake: s.Brake}
	for _, p := range s.Pending {
		d.PendingDeletions = append(d.PendingDeletions, pendingDoc{Key: p.Key, Due: p.Due.UTC()})
	}
	if m := s.Target.MaxEntries; m > 0 && !s.AppendOnly {
		d.Capacity = &capacityDoc{MaxEntries: m, Projected: s.Projected, Ratio: float64(s.Projected) / float64(m), Fits: s.Projected <= m}
	}
	for _, c := range s.Changes {
		cd := changeDoc{Action: c.Action.String(), Key: c.Key, Shown: shownDoc{Before: c.Before, After: c.After},
			Origins: c.Origins, Sensitive: c.Sensitive || p.isSensitive(s.Address, c.Key), Detail: c.Detail, DryRunError: c.DryRunError, Held: c.Braked,
			Refused: c.Refused, Adopts: c.Adopts}
		if cd.Origins == nil {
			cd.Origins = []string{}
		}
		if c.Action != reconcile.Create {
			cd.Before = ctyconv.FromCty(schema.Masked(c.Old.Value))
		}
		if c.Action != reconcile.Delete {
			cd.After = ctyconv.FromCty(schema.Masked(c.New.Value))
		}
		d.Changes = append(d.Changes, cd)
	}
	for _, k := range s.Skipped {
		d.Skipped = append(d.Skipped, skippedDoc{Key: k.Key, Error: k.Err})
	}
	return d
}
