package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"

	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/configwatch"
	"github.com/pipeline/pipeline/internal/redact"
	"github.com/pipeline/pipeline/schema"
)

// reloadFlags configure hot reload in `pipeline run`.
type reloadFlags struct {
	watch    bool
	interval time.Duration
	debounce time.Duration
	timeout  time.Duration
}

// reloader turns triggers (file events, polls, SIGHUP) into reloads, one
// at a time. A trigger that arrives during a reload is kept and starts one
// more reload after it: triggers coalesce, never drop.
type reloader struct {
	paths   []string
	opts    schema.Options
	reg     *node.Registry
	rt      *engine.Runtime
	secrets *redact.Redactor
	log     *slog.Logger
	timeout time.Duration
	leader  string // leaderKey of the running configuration

	wake     chan struct{} // capacity 1: a reload is due
	mu       sync.Mutex
	pending  string // trigger of the reload due; "" when none
	force    bool   // a due trigger reloads even unchanged content (SIGHUP)
	lastHash string
}

func newReloader(paths []string, opts schema.Options, reg *node.Registry, rt *engine.Runtime, l *loaded,
	secrets *redact.Redactor, log *slog.Logger, timeout time.Duration) *reloader {
	r := &reloader{paths: paths, opts: opts, reg: reg, rt: rt, secrets: secrets, log: log, timeout: timeout,
		leader: leaderKey(l.cfg.LeaderElection), wake: make(chan struct{}, 1)}
	if files, err := schema.ConfigFiles(paths); err == nil {
		r.lastHash, _ = configwatch.Hash(files)
	}
	return r
}

// trigger asks for a reload; force reloads even when no file changed.
func (r *reloader) trigger(kind string, force bool) {
	r.mu.Lock()
	if r.pending == "" {
		r.pending = kind
	}
	r.force = r.force || force
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default: // already due; this trigger is part of it
	}
}

// run reloads on each trigger until ctx ends.
func (r *reloader) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
		r.mu.Lock()
		kind, force := r.pending, r.force
		r.pending, r.force = "", false
		r.mu.Unlock()
		r.reload(ctx, kind, force)
	}
}

// reload reads, validates and applies the configuration once.
func (r *reloader) reload(ctx context.Context, trigger string, force bool) {
	rec := engine.ReloadRecord{Trigger: trigger, Started: time.Now()}
	files, err := schema.ConfigFiles(r.paths)
	if err == nil {
		rec.Hash, err = configwatch.Hash(files)
	}
	if err != nil {
		rec.Error = err.Error()
		r.rt.Reject(rec)
		return
	}
	if rec.Hash == r.lastHash && !force {
		r.log.Debug("configuration unchanged; nothing to reload", "file", fmt.Sprint(files))
		return
	}
	r.lastHash = rec.Hash
	l := loadWith(r.paths, r.opts, r.reg)
	if l.cfg != nil {
		r.secrets.Add(l.cfg.Sensitive) // before anything about it is logged
	}
	rec.Diagnostics = r.diagnostics(l.diags)
	switch {
	case l.diags.HasErrors():
		rec.Error = fmt.Sprintf("the configuration has %d errors", errorCount(l.diags))
	case leaderKey(l.cfg.LeaderElection) != r.leader:
		rec.Error = "the leader_election block changed; restart the pipeline to apply it"
	default:
		if err := preflight(l.graph); err != nil {
			rec.Error = r.secrets.String(err.Error())
		}
	}
	if rec.Error != "" {
		r.rt.Reject(rec)
		return
	}
	r.rt.Reload(ctx, l.graph, rec, r.timeout)
}

// diagnostics renders diags as file:line:col: summary: detail, secrets masked.
func (r *reloader) diagnostics(diags hcl.Diagnostics) []string {
	var out []string
	for _, d := range diags {
		s := d.Summary
		if d.Subject != nil {
			s = schema.Pos(*d.Subject) + ": " + s
		}
		if d.Severity == hcl.DiagWarning {
			s = "warning: " + s
		}
		if d.Detail != "" {
			s += ": " + d.Detail
		}
		out = append(out, r.secrets.String(s))
	}
	return out
}

func errorCount(diags hcl.Diagnostics) int {
	n := 0
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			n++
		}
	}
	return n
}

// leaderKey sums up what leader election runs with; a reload cannot change it.
func leaderKey(le *schema.LeaderElection) string {
	if le == nil {
		return ""
	}
	var c string
	if cl := le.Cluster; cl != nil {
		c = fmt.Sprint(cl.Name, cl.Kubeconfig, cl.Context, cl.InCluster, cl.Endpoint, cl.TokenFile)
	}
	return fmt.Sprint(le.Namespace, le.LeaseName, le.LeaseDuration, le.RenewDeadline, le.RetryPeriod, c)
}

// startReloads runs the reloader, the watcher (unless --watch=false) and
// the SIGHUP handler until ctx ends; the returned function waits for them.
func startReloads(ctx context.Context, r *reloader, f reloadFlags) (wait func()) {
	var wg sync.WaitGroup
	wg.Go(func() { r.run(ctx) })
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	wg.Go(func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				r.log.Info("reload requested by SIGHUP")
				r.trigger("signal", true)
			}
		}
	})
	if f.watch {
		hash := func() (string, error) {
			files, err := schema.ConfigFiles(r.paths)
			if err != nil {
				return "", err
			}
			return configwatch.Hash(files)
		}
		o := configwatch.Options{Dirs: configwatch.Dirs(r.paths), Debounce: f.debounce, Interval: f.interval, Hash: hash, Logger: r.log,
			Relevant: configwatch.Relevant(r.paths)}
		wg.Go(func() { _ = configwatch.Run(ctx, o, func() { r.trigger("file", false) }) })
	}
	return wg.Wait
}

func reloadFlagSet(cmd *cobra.Command, f *reloadFlags) {
	cmd.Flags().BoolVar(&f.watch, "watch", true, "reload when the configuration files change (SIGHUP always reloads)")
	cmd.Flags().DurationVar(&f.interval, "watch-interval", 0, "also poll the configuration's content at this interval; for filesystems where inotify fails (0: poll every 2s only when inotify is unavailable)")
	cmd.Flags().DurationVar(&f.debounce, "watch-debounce", configwatch.DefaultDebounce, "quiet time after the last file event before a reload")
	cmd.Flags().DurationVar(&f.timeout, "reload-timeout", engine.DefaultReloadTimeout, "how long a reload waits for its new sources to sync and its new sinks to be ready before it rolls back")
}
