package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/engine/reconcile"
	"github.com/pipeline/pipeline/internal/ctyconv"
	"github.com/pipeline/pipeline/schema"
)

// planView prints a plan; the text and JSON views are chosen once.
type planView interface {
	write(w io.Writer, p *maskedPlan) error
}

// textPlan is the human view: per sink its target and its first max
// changes, then the warnings and a one-line count.
type textPlan struct {
	colour bool
	max    int
}

var actionColours = map[reconcile.Action]string{reconcile.Create: "\x1b[32m", reconcile.Update: "\x1b[33m", reconcile.Delete: "\x1b[31m"}

func (v textPlan) paint(code, s string) string {
	if !v.colour {
		return s
	}
	return code + s + "\x1b[0m"
}

func (v textPlan) write(w io.Writer, p *maskedPlan) error {
	var b strings.Builder
	if p.reload != nil {
		v.writeReload(&b, p.reload)
	}
	for _, s := range p.Sinks {
		v.sink(&b, &s)
	}
	for _, wn := range p.Warnings {
		fmt.Fprintf(&b, "%s %s: %s\n", v.paint("\x1b[33m", "Warning:"), wn.Address, wn.Message)
	}
	b.WriteString(v.paint("\x1b[1m", planSummary(&p.PlanResult, p.reload)) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// targetLine describes a sink's target in the heading of its block.
func targetLine(s *engine.SinkPlan) string {
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
		parts = append(parts, fmt.Sprintf("%d / %d entries", s.Held, t.MaxEntries))
	default:
		parts = append(parts, plural(s.Held, "entry"))
	}
	return strings.Join(parts, ", ")
}

func (v textPlan) sink(b *strings.Builder, s *engine.SinkPlan) {
	fmt.Fprintf(b, "%s  (%s)\n", v.paint("\x1b[1m", s.Address), targetLine(s))
	for _, p := range s.Pending {
		fmt.Fprintf(b, "    pending: %s would be removed at %s (grace period)\n", p.Key, p.Due.UTC().Format(time.RFC3339))
	}
	if len(s.Changes) == 0 {
		b.WriteString("    no changes\n")
		return
	}
	shown := s.Changes[:min(len(s.Changes), v.max)]
	width := 0
	for _, c := range shown {
		width = max(width, len(c.Key))
	}
	for _, c := range shown {
		fmt.Fprintf(b, "  %s %-*s  %s\n", v.paint(actionColours[c.Action], string(rune(c.Action))), width, c.Key, changeText(c))
		for _, l := range c.Detail {
			fmt.Fprintf(b, "      %s\n", l)
		}
		if c.DryRunError != "" {
			fmt.Fprintf(b, "      would fail: %s\n", c.DryRunError)
		}
	}
	if rest := len(s.Changes) - len(shown); rest > 0 {
		a, u, d := countActions(s.Changes[len(shown):])
		fmt.Fprintf(b, "  ... and %d more (%d to add, %d to change, %d to remove; --max-entries or --json shows all)\n", rest, a, u, d)
	}
	if s.File != nil && s.File.Diff != "" {
		for _, l := range strings.SplitAfter(strings.TrimSuffix(s.File.Diff, "\n"), "\n") {
			b.WriteString("    " + v.diffLine(l))
		}
		b.WriteString("\n")
	}
}

// diffLine paints one line of a file's unified diff.
func (v textPlan) diffLine(l string) string {
	switch {
	case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"), strings.HasPrefix(l, "@@"):
		return v.paint("\x1b[1m", strings.TrimSuffix(l, "\n")) + "\n"
	case strings.HasPrefix(l, "+"):
		return v.paint(actionColours[reconcile.Create], strings.TrimSuffix(l, "\n")) + "\n"
	case strings.HasPrefix(l, "-"):
		return v.paint(actionColours[reconcile.Delete], strings.TrimSuffix(l, "\n")) + "\n"
	}
	return l
}

// changeText is what follows a change's key: the value and where it comes
// from, or why it goes.
func changeText(c engine.PlannedChange) string {
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
		return "no longer desired (was " + before + ")"
	}
	if len(c.Origins) > 0 {
		s += "  from " + strings.Join(c.Origins, ", ")
	}
	return s
}

func countActions(cs []engine.PlannedChange) (a, u, d int) {
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
	_ planView = textPlan{}
	_ planView = jsonPlan{}
)
