package planview

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pipeline/pipeline/cmd/pipeline/view"
	"github.com/pipeline/pipeline/engine/plan"
	"github.com/pipeline/pipeline/engine/reconcile"
	"github.com/pipeline/pipeline/internal/ctyconv"
	"github.com/pipeline/pipeline/schema"
)

// View prints a plan; the text and JSON views are chosen once.
type View interface {
	Write(w io.Writer, p *Plan) error
}

// Text is the human view: per sink its target and its first max
// changes, then the warnings and a one-line count.
type Text struct {
	Colour bool
	Max    int
}

var actionColours = map[reconcile.Action]string{reconcile.Create: "\x1b[32m", reconcile.Update: "\x1b[33m", reconcile.Delete: "\x1b[31m"}

// Write writes p for people.
func (v Text) Write(w io.Writer, p *Plan) error {
	t := view.NewTermText(v.Colour)
	if p.Reload != nil {
		v.WriteReload(t, p.Reload)
	}
	for _, s := range p.Sinks {
		v.sink(t, &s)
	}
	for _, wn := range p.Warnings {
		t.Paint("\x1b[33m", "Warning:")
		fmt.Fprintf(t, " %s: %s\n", wn.Address, wn.Message)
	}
	t.Paint("\x1b[1m", planSummary(&p.PlanResult, p.Reload))
	fmt.Fprintln(t)
	_, err := io.WriteString(w, t.String())
	return err
}

// targetLine describes a sink's target in the heading of its block.
func targetLine(s *plan.SinkPlan) string {
	t := s.Target
	parts := []string{t.Location}
	if t.Kind != "" {
		parts = append(parts, t.Kind)
	}
	switch {
	case t.Replace != "":
		parts = append(parts, "must be replaced: "+t.Replace)
	case s.AppendOnly:
		parts = append(parts, "append-only: what the initial sync would emit")
	case !t.Exists:
		parts = append(parts, "would be created")
	case t.MaxEntries > 0:
		parts = append(parts, fmt.Sprintf("%d / %d entries", s.Actual, t.MaxEntries))
	default:
		parts = append(parts, view.Plural(s.Actual, "entry"))
	}
	return strings.Join(parts, ", ")
}

func (v Text) sink(t *view.TermText, s *plan.SinkPlan) {
	t.Paint("\x1b[1m", s.Address)
	fmt.Fprintf(t, "  (%s)\n", targetLine(s))
	if s.Target.Note != "" {
		fmt.Fprintf(t, "    note: %s\n", s.Target.Note)
	}
	for _, p := range s.Pending {
		fmt.Fprintf(t, "    pending: %s would be removed at %s (grace period)\n", p.Key, p.Due.UTC().Format(time.RFC3339))
	}
	if len(s.Changes) == 0 {
		fmt.Fprintln(t, "    no changes")
		return
	}
	shown := s.Changes[:min(len(s.Changes), v.Max)]
	width := 0
	for _, c := range shown {
		width = max(width, len(view.Printable(c.Key)))
	}
	for _, c := range shown {
		fmt.Fprint(t, "  ")
		if c.Refused != "" { // run would write nothing there
			t.Paint(actionColours[reconcile.Delete], "!")
			fmt.Fprintf(t, " %-*s  refused: %s\n", width, view.Printable(c.Key), c.Refused)
			continue
		}
		t.Paint(actionColours[c.Action], string(rune(c.Action)))
		fmt.Fprintf(t, " %-*s  %s\n", width, view.Printable(c.Key), changeText(c))
		if c.Adopts != "" {
			fmt.Fprintf(t, "      adopts it: %s\n", c.Adopts)
		}
		for _, l := range c.Detail {
			fmt.Fprintf(t, "      %s\n", l)
		}
		if c.DryRunError != "" {
			fmt.Fprintf(t, "      would fail: %s\n", c.DryRunError)
		}
	}
	if rest := len(s.Changes) - len(shown); rest > 0 {
		a, u, d := countActions(s.Changes[len(shown):])
		fmt.Fprintf(t, "  ... and %d more (%d to add, %d to change, %d to remove; --max-entries or --json shows all)\n", rest, a, u, d)
	}
	if s.File != nil && s.File.Diff != "" {
		for _, l := range strings.SplitAfter(strings.TrimSuffix(s.File.Diff, "\n"), "\n") {
			fmt.Fprint(t, "    ")
			diffLine(t, strings.TrimSuffix(l, "\n"))
		}
	}
}

// diffLine writes one line of a file's unified diff, painted.
func diffLine(t *view.TermText, l string) {
	switch {
	case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"), strings.HasPrefix(l, "@@"):
		t.Paint("\x1b[1m", l)
	case strings.HasPrefix(l, "+"):
		t.Paint(actionColours[reconcile.Create], l)
	case strings.HasPrefix(l, "-"):
		t.Paint(actionColours[reconcile.Delete], l)
	default:
		fmt.Fprint(t, l)
	}
	fmt.Fprintln(t)
}

// changeText is what follows a change's key: the value and where it comes
// from, or why it goes.
func changeText(c plan.PlannedChange) string {
	before, after := c.Before, c.After
	if before == "" && c.Action != reconcile.Create {
		before = ctyconv.String(schema.Masked(c.Old.Value))
	}
	if after == "" && c.Action != reconcile.Delete {
		after = ctyconv.String(schema.Masked(c.New.Value))
	}
	var s string
	switch c.Action {
	case reconcile.Create:
		s = "=> " + after
	case reconcile.Update:
		s = fmt.Sprintf("=> %s (was %s)", after, before)
	case reconcile.Delete:
		if c.Braked {
			return "no longer desired, held by the deletion brake (was " + before + ")"
		}
		return "no longer desired (was " + before + ")"
	}
	if len(c.Origins) > 0 {
		s += "  from " + strings.Join(c.Origins, ", ")
	}
	return s
}

func countActions(cs []plan.PlannedChange) (a, u, d int) {
	for _, c := range cs {
		switch c.Action {
		case reconcile.Create:
			a++
		case reconcile.Update:
			u++
		case reconcile.Delete:
			d++
		}
	}
	return a, u, d
}

var (
	_ View = Text{}
	_ View = JSON{}
)
