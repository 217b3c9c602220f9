package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/cmd/pipeline/view"
	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/redact"
	"github.com/pipeline/pipeline/schema"
)

type planFlags struct {
	vars       []string
	json       bool
	maxEntries int
	wait       time.Duration
	logLevel   string
	against    string
}

func newPlanCmd() *cobra.Command {
	var f planFlags
	cmd := &cobra.Command{
		Use:   "plan [-var name=value]... [--json] [--max-entries N] [--against URL] PATH...",
		Short: "Show what run would change in every sink's target, writing nothing",
		Long: "Compiles the configuration, connects the sources and waits for their initial sync (progress on a\n" +
			"terminal), then reads every sink's target read-only (a pinned map's entries, a KV bucket's keys) and\n" +
			"prints what run would add, change and remove, with the record each entry comes from. Append-only\n" +
			"sinks (nats, audit, log) list what the initial sync would emit. Plan writes nothing: no map entry,\n" +
			"no key, no message, no line, no file or directory; a missing map is shown as \"would be created\".\n\n" +
			"Exit status: 0 no changes, 2 changes, 1 error. --json prints the whole plan as a document with\n" +
			"format_version (docs/plan.md); the text view shows the first --max-entries changes per sink.\n\n" +
			"--against http://ADDR asks a running `pipeline run` for its graph (GET /graph on its --listen address)\n" +
			"and also shows what a reload to PATH would do to its nodes: added, rebuilt, removed, kept, relisted.",
		Example: "  pipeline plan examples/flagship\n" +
			"  pipeline plan --json -var kubeconfig=$HOME/.kube/config examples/demo | jq .summary\n" +
			"  pipeline plan --against http://127.0.0.1:9464 examples/flagship",
		Args: needPaths(),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runPlan(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), args, f)
		},
	}
	cmd.Flags().StringArrayVar(&f.vars, "var", nil, "set a variable: -var name=value (repeatable); PIPELINE_VAR_name also works")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the plan as JSON (docs/plan.md), every change included")
	cmd.Flags().IntVar(&f.maxEntries, "max-entries", 20, "changes shown per sink in the text view; the rest are counted")
	cmd.Flags().DurationVar(&f.wait, "wait", 2*time.Minute, "how long to wait for the sources' initial sync")
	cmd.Flags().StringVar(&f.logLevel, "log-level", "warn", "level of the logs on stderr: debug, info, warn or error")
	cmd.Flags().StringVar(&f.against, "against", "", "admin address of a running pipeline (127.0.0.1:9464, or a URL): also show what a reload of it to PATH would do to its nodes")
	return cmd
}

func runPlan(ctx context.Context, stdout, stderr io.Writer, paths []string, f planFlags) error {
	if f.maxEntries < 0 {
		return fmt.Errorf("--max-entries %d: give a number of changes, or 0 for counts only", f.maxEntries)
	}
	var reload *reloadPlan
	if f.against != "" {
		// The instance's fingerprint key must be in use before the
		// planned graph compiles (fpkey.go).
		var err error
		if reload, err = fetchGraph(ctx, f.against); err != nil {
			return err
		}
		reload.keyErr = useInstanceKey(reload.running)
	}
	l := load(paths, f.vars)
	if l.diags.HasErrors() {
		view.WriteDiagsText(stderr, l.files, l.diags)
		return exitError{1}
	}
	if reload != nil {
		reload.compare(l.graph)
	}
	if err := preflight(l.graph); err != nil {
		return err
	}
	secrets := redact.New(l.cfg.Sensitive)
	logger, err := newLogger(stderr, "text", f.logLevel, secrets)
	if err != nil {
		return err
	}
	opts := engine.PlanOptions{Logger: logger, Wait: f.wait}
	if colourful(stderr) && !f.json {
		p := &progress{w: stderr}
		opts.Progress = p.show
		defer p.done()
	}
	plan, err := engine.Plan(ctx, l.graph, opts)
	if err != nil {
		return fmt.Errorf("plan: %s", secrets.String(err.Error()))
	}
	if reload != nil {
		keptEmitNothing(plan, reload)
	}
	masked := maskPlan(plan, secrets)
	masked.reload = reload
	pv := planView(textPlan{colour: colourful(stdout), max: f.maxEntries})
	if f.json {
		pv = jsonPlan{}
	}
	if err := pv.write(stdout, masked); err != nil {
		return err
	}
	if a, c, r := plan.Counts(); a+c+r > 0 || replacements(plan) > 0 || (reload != nil && reload.diff.Changed()) {
		return exitError{2}
	}
	return nil
}

// progress draws one line per source on a terminal while plan waits for
// the initial sync, redrawing in place.
type progress struct {
	w     io.Writer
	lines int
}

func (p *progress) show(states []engine.SourceState) {
	if p.lines > 0 {
		fmt.Fprintf(p.w, "\x1b[%dA", p.lines)
	}
	for _, s := range states {
		state := "syncing"
		if s.Synced {
			state = "synced"
		}
		fmt.Fprintf(p.w, "\x1b[2K%s: %s, %d records\n", s.Address, state, s.Records)
	}
	p.lines = len(states)
}

func (p *progress) done() {
	if p.lines > 0 {
		fmt.Fprintln(p.w)
	}
}

// maskPlan returns p with every secret masked in keys, values, origins,
// locations and warnings, so no view can print one.
func maskPlan(p *engine.PlanResult, secrets *redact.Redactor) *maskedPlan {
	out := &maskedPlan{PlanResult: *p}
	if secrets.Empty() {
		return out
	}
	out.Sinks = make([]engine.SinkPlan, len(p.Sinks))
	for i, s := range p.Sinks {
		s.Target.Location = secrets.String(s.Target.Location)
		changes := make([]engine.PlannedChange, len(s.Changes))
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
	out.Warnings = make([]engine.PlanWarning, len(p.Warnings))
	for i, w := range p.Warnings {
		out.Warnings[i] = engine.PlanWarning{Address: w.Address, Message: secrets.String(w.Message)}
	}
	return out
}

// maskedPlan is a plan whose secrets are masked, with the changes that
// held one marked.
type maskedPlan struct {
	engine.PlanResult
	masked map[string]bool // address + "\x00" + key
	reload *reloadPlan     // --against: the node diff of a reload
}

func (m *maskedPlan) sensitive(addr, key string) {
	if m.masked == nil {
		m.masked = map[string]bool{}
	}
	m.masked[addr+"\x00"+key] = true
}

func (m *maskedPlan) isSensitive(addr, key string) bool { return m.masked[addr+"\x00"+key] }

// planSummary is the one-line count that ends a text plan; with
// --against it counts the nodes the reload would rebuild, add and remove
// too, which plan's exit status 2 stands for even when no entry changes.
func planSummary(p *engine.PlanResult, rp *reloadPlan) string {
	s := entrySummary(p)
	if rp == nil || !rp.diff.Changed() {
		return s
	}
	c := rp.diff.Count()
	nodes := fmt.Sprintf("The reload would rebuild %s, add %s and remove %s.", plural(c[engine.Rebuilt], "node"),
		plural(c[engine.Added], "node"), plural(c[engine.Removed], "node"))
	if strings.HasPrefix(s, "No changes.") {
		return "No changes to the targets' entries. " + nodes + strings.TrimPrefix(s, "No changes. Every target already holds what the sources say.")
	}
	return s + " " + nodes
}

// plural is "1 node" or "2 nodes" ("1 entry", "2 entries").
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(noun, "y"))
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func entrySummary(p *engine.PlanResult) string {
	a, c, r := p.Counts()
	emit := ""
	if e := p.Emits(); e > 0 {
		emit = fmt.Sprintf(" The initial sync would emit %d records to append-only sinks.", e)
	}
	replace := ""
	if n := replacements(p); n > 0 {
		replace = fmt.Sprintf("%d to replace, ", n)
	}
	if a+c+r == 0 && replace == "" {
		return "No changes. Every target already holds what the sources say." + emit
	}
	return fmt.Sprintf("Plan: %s%d to add, %d to change, %d to remove.", replace, a, c, r) + emit
}

// replacements counts the targets run would replace (must be replaced).
func replacements(p *engine.PlanResult) int {
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
