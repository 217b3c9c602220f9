package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline/pipeline/cmd/pipeline/inspect"
	"github.com/pipeline/pipeline/cmd/pipeline/planview"
	"github.com/pipeline/pipeline/cmd/pipeline/view"
	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/plan"
	"github.com/pipeline/pipeline/internal/redact"
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
			"Exit status: 0 no changes, 2 changes, 1 error; 130 (SIGINT) or 143 (SIGTERM) when interrupted, within\n" +
			"2s even while the configuration loads. --json prints the whole plan as a document with\n" +
			"format_version (docs/plan.md); the text view shows the first --max-entries changes per sink.\n\n" +
			"--against http://ADDR asks a running `pipeline run` for its graph (GET /graph on its --listen address)\n" +
			"and also shows what a reload to PATH would do to its nodes: added, rebuilt, removed, kept, relisted;\n" +
			"sink \"prometheus\" then compares with the series the instance serves (its /metrics).",
		Example: "  pipeline plan examples/flagship\n" +
			"  pipeline plan --json -var kubeconfig=$HOME/.kube/config examples/demo | jq .summary\n" +
			"  pipeline plan --against http://127.0.0.1:9464 examples/flagship",
		Args: needPaths(),
		RunE: func(cmd *cobra.Command, args []string) error {
			in := onInterrupt(cmd.Context(), cmd.ErrOrStderr(), "plan", interruptGrace)
			err := runPlan(in.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args, f)
			return in.end(cmd.ErrOrStderr(), "plan", err)
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
	var reload *planview.Reload
	if f.against != "" {
		// The instance's fingerprint key must be in use before the
		// planned graph compiles (fpkey.go).
		var err error
		if reload, err = fetchGraph(ctx, f.against); err != nil {
			return err
		}
		reload.KeyErr = useInstanceKey(reload.Running)
		// A target whose state is the instance's memory (sink
		// "prometheus") reads it from the instance.
		metrics, err := inspect.AdminURL(f.against, "/metrics", nil)
		if err != nil {
			return err
		}
		ctx = node.WithRunning(ctx, node.Running{MetricsURL: metrics})
	}
	l := load(paths, f.vars)
	if l.diags.HasErrors() {
		view.WriteDiagsText(stderr, l.files, l.diags)
		return exitError{1}
	}
	if reload != nil {
		reload.Diff = graph.DiffGraphs(reload.Running.Graph(), l.graph)
	}
	if err := preflight(l.graph); err != nil {
		return err
	}
	secrets := redact.New(l.cfg.Sensitive)
	logger, err := newLogger(stderr, "text", f.logLevel, secrets)
	if err != nil {
		return err
	}
	opts := plan.PlanOptions{Logger: logger, Wait: f.wait}
	if view.Colourful(stderr) && !f.json {
		p := &progress{w: stderr}
		opts.Progress = p.show
		defer p.done()
	}
	res, err := plan.Plan(ctx, l.graph, opts)
	if err != nil {
		return fmt.Errorf("plan: %s", secrets.String(err.Error()))
	}
	if reload != nil {
		keptEmitNothing(res, reload)
	}
	masked := planview.Mask(res, secrets)
	masked.Reload = reload
	pv := planview.View(planview.Text{Colour: view.Colourful(stdout), Max: f.maxEntries})
	if f.json {
		pv = planview.JSON{}
	}
	if err := pv.Write(stdout, masked); err != nil {
		return err
	}
	if a, c, r := res.Counts(); a+c+r > 0 || planview.Replacements(res) > 0 || (reload != nil && reload.Diff.Changed()) {
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
