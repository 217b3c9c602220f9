package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"

	"github.com/pipeline/pipeline/cmd/pipeline/view"
	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/engine/graph"
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
	leader  *schema.LeaderElection // of the running configuration; a reload cannot change it
	// onApplied, when set, is handed the graph of each applied reload (the web console).
	onApplied func(*graph.Graph)

	wake     chan struct{} // capacity 1: a reload is due
	mu       sync.Mutex
	pending  string // trigger of the reload due; "" when none
	force    bool   // a due trigger reloads even unchanged content (SIGHUP)
	lastHash string
}

func newReloader(paths []string, opts schema.Options, reg *node.Registry, rt *engine.Runtime, l *loaded,
	secrets *redact.Redactor, log *slog.Logger, timeout time.Duration) *reloader {
	r := &reloader{paths: paths, opts: opts, reg: reg, rt: rt, secrets: secrets, log: log, timeout: timeout,
		leader: l.cfg.LeaderElection, wake: make(chan struct{}, 1)}
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
	if l.diags.HasErrors() {
		rec.Error = "the configuration has " + view.Plural(errorCount(l.diags), "error")
	} else if change := leaderChange(r.leader, l.cfg.LeaderElection); change != "" {
		rec.Error = r.secrets.String(leaderRefusal(change))
	} else if err := preflight(l.graph); err != nil {
		rec.Error = r.secrets.String(err.Error())
	}
	if rec.Error != "" {
		r.rt.Reject(rec)
		return
	}
	if rec = r.rt.Reload(ctx, l.graph, rec, r.timeout); rec.Result == engine.ReloadApplied && r.onApplied != nil {
		r.onApplied(l.graph)
	}
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

// leaderRefusal is the error of a reload that changes leader_election:
// what changed, that nothing was applied, and what to do instead.
func leaderRefusal(change string) string {
	return change + ": leader election cannot change while the pipeline runs, so nothing of this " +
		"configuration was applied and the running graph goes on with the leader_election it started with; " +
		"restart the pipeline (every instance, for example by rolling the Deployment) to apply it"
}

// leaderChange says how next's leader_election differs from cur's, by
// attribute name (never by value: a value may come from a secret); "" when
// they are the same.
func leaderChange(cur, next *schema.LeaderElection) string {
	switch {
	case cur == nil && next == nil:
		return ""
	case cur == nil:
		return "a leader_election block was added"
	case next == nil:
		return "the leader_election block was removed"
	}
	var changed []string
	for _, a := range []struct {
		name string
		same bool
	}{
		{"cluster", clusterName(cur.Cluster) == clusterName(next.Cluster)},
		{"namespace", cur.Namespace == next.Namespace},
		{"lease_name", cur.LeaseName == next.LeaseName},
		{"lease_duration", cur.LeaseDuration == next.LeaseDuration},
		{"renew_deadline", cur.RenewDeadline == next.RenewDeadline},
		{"retry_period", cur.RetryPeriod == next.RetryPeriod},
	} {
		if !a.same {
			changed = append(changed, a.name)
		}
	}
	if len(changed) > 0 {
		return "leader_election changed (" + strings.Join(changed, ", ") + ")"
	}
	if clusterKey(cur.Cluster) != clusterKey(next.Cluster) {
		return "cluster." + next.Cluster.Name + ", which leader_election uses, changed"
	}
	return ""
}

func clusterName(c *schema.Cluster) string {
	if c == nil {
		return ""
	}
	return c.Name
}

// clusterKey sums up the connection settings of the cluster leader
// election uses.
func clusterKey(c *schema.Cluster) string {
	if c == nil {
		return ""
	}
	return fmt.Sprint(c.Kubeconfig, "\x00", c.Context, "\x00", c.InCluster, "\x00", c.Endpoint, "\x00", c.TokenFile)
}

// startReloads runs the reloader, the watcher (unless --watch=false) and
// the handler of hup (SIGHUP) until ctx ends; the returned function waits
// for them.
func startReloads(ctx context.Context, r *reloader, f reloadFlags, hup <-chan os.Signal) (wait func()) {
	loaded := r.lastHash // the running configuration's, before run may change it
	var wg sync.WaitGroup
	wg.Go(func() { r.run(ctx) })
	wg.Go(func() {
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
			Relevant: configwatch.Relevant(r.paths), Baseline: loaded}
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
