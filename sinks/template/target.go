package template

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/backoff"
	"github.com/pipeline/pipeline/internal/redact"
	"github.com/pipeline/pipeline/schema"
)

// Target is one rendered file. Update and Delete record the entries; Commit
// renders them, checks and swaps the file and reloads its reader.
type Target struct {
	s    *Sink
	env  node.Env
	plan bool
	own  fileOwner
	met  metrics
	// cancel and done stop the reload retry loop (Close).
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{}

	mu      sync.Mutex
	held    map[node.Key]node.Entry
	recs    map[node.Key]record // each held entry as the template sees it
	order   []node.Key          // held's keys sorted; nil after a key came or went
	secret  map[node.Key]bool   // held entries whose value is sensitive
	changed bool                // held changed since the last render
	last    *rendering          // the last good render; nil before the first
	// confirmed: the file on disk held last.data when last compared or
	// written, so finding it different later means someone edited it.
	confirmed bool
	// failedCheck is the digest of the last candidate check_command
	// refused: the same bytes are not checked again (never in a loop).
	failedCheck string
	problems    map[string]string // stage -> error, for health and explain
	reload      reloadState
	lastReload  time.Time // when the last reload was made, whatever its outcome
	lastDigest  string
}

// reloadState is a reload that failed and waits for its retry.
type reloadState struct {
	pending  bool
	attempts int
	due      time.Time
}

// spaced reports whether a reload now would come within reload_interval
// of the last one; it then schedules it for when that has passed.
func (t *Target) spaced() bool {
	if t.lastReload.IsZero() || t.s.reloadGap <= 0 {
		return false
	}
	due := t.lastReload.Add(t.s.reloadGap)
	if !t.env.Now().Before(due) {
		return false
	}
	t.reload = reloadState{pending: true, due: due, attempts: t.reload.attempts}
	select {
	case t.wake <- struct{}{}:
	default:
	}
	return true
}

type metrics struct {
	renders  *prometheus.CounterVec
	checks   *prometheus.CounterVec
	reloads  *prometheus.CounterVec
	restored prometheus.Counter
	failing  prometheus.Gauge
}

// Open implements node.Sink. ModePlan reads nothing and starts nothing;
// ModeRun resolves owner and group and starts the reload retry loop.
func (s *Sink) Open(_ context.Context, env node.Env, mode node.Mode) (node.Target, error) {
	t := &Target{s: s, env: env, plan: mode == node.ModePlan, held: map[node.Key]node.Entry{}, recs: map[node.Key]record{}, secret: map[node.Key]bool{}, problems: map[string]string{}}
	if t.plan {
		return t, nil
	}
	own, err := resolveOwner(s.owner, s.group)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.path, err)
	}
	t.own = own
	if err := t.registerMetrics(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.cancel, t.done, t.wake = cancel, make(chan struct{}), make(chan struct{}, 1)
	go t.retryLoop(ctx)
	return t, nil
}

func (t *Target) registerMetrics() error {
	t.met = metrics{
		renders: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pipeline_sink_template_renders_total",
			Help: "Renders of the file by result: written, unchanged (equal to the file on disk), error (template error), refused (check_command failed)."}, []string{"result"}),
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pipeline_sink_template_checks_total",
			Help: "Runs of check_command by result (ok, failed)."}, []string{"result"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pipeline_sink_template_reloads_total",
			Help: "Reloads (reload_command or reload_signal) by result (ok, failed)."}, []string{"result"}),
		restored: prometheus.NewCounter(prometheus.CounterOpts{Name: "pipeline_sink_template_restored_total",
			Help: "Times the file was found changed or removed by someone else and restored."}),
		failing: prometheus.NewGauge(prometheus.GaugeOpts{Name: "pipeline_sink_template_failing",
			Help: "1 while the file is not what the input says (render, check, write or reload failing), else 0."}),
	}
	for _, c := range []prometheus.Collector{t.met.renders, t.met.checks, t.met.reloads, t.met.restored, t.met.failing} {
		if err := t.env.Metrics.Register(c); err != nil {
			return fmt.Errorf("%s: register metrics: %w", t.s.path, err)
		}
	}
	return nil
}

// Prepare implements node.Target: an entry is the record itself.
func (t *Target) Prepare(r node.Record) (node.Entry, error) {
	return node.Entry{Key: r.Key, Value: r.Value}, nil
}

// Actual implements node.Target: the entries the target was given. The
// file itself is compared with their render at the end of every full
// reconcile (Commit), which restores a file edited by hand.
func (t *Target) Actual(context.Context) ([]node.Entry, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]node.Entry, 0, len(t.held))
	for _, e := range t.held {
		out = append(out, e)
	}
	return out, nil
}

// Update implements node.Target: it records the entries (never fails).
func (t *Target) Update(_ context.Context, batch []node.Entry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range batch {
		if _, ok := t.held[e.Key]; !ok {
			t.order = nil
		}
		t.held[e.Key] = node.Entry{Key: e.Key, Value: e.Value}
		t.recs[e.Key] = t.s.newRecord(e)
		if schema.IsSensitive(e.Value) {
			t.secret[e.Key] = true
		} else if t.secret[e.Key] {
			delete(t.secret, e.Key)
		}
	}
	t.changed = t.changed || len(batch) > 0
}

// Delete implements node.Target.
func (t *Target) Delete(_ context.Context, batch []node.Entry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range batch {
		if _, ok := t.held[e.Key]; ok {
			delete(t.held, e.Key)
			delete(t.recs, e.Key)
			delete(t.secret, e.Key)
			t.order = nil
		}
	}
	t.changed = t.changed || len(batch) > 0
}

// Commit implements node.Committer: once the input synced, it renders
// what changed and makes the file equal to the render.
func (t *Target) Commit(ctx context.Context, r node.Round) []node.Entry {
	if t.plan || !r.Synced {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.changed && t.last != nil && !r.Full {
		return nil
	}
	var prev []byte // what the file holds, as far as the target knows
	if t.confirmed {
		prev = t.last.data
	}
	if t.changed || t.last == nil {
		t.changed = false
		rend, err := t.s.renderRecords(t.records(), len(t.secret) > 0)
		if err != nil {
			t.met.renders.WithLabelValues("error").Inc()
			t.problem("render", err, "render failed; the file is kept")
			return nil
		}
		t.problem("render", nil, "")
		if t.last != nil && bytes.Equal(t.last.data, rend.data) {
			t.last.secrets = rend.secrets
		} else {
			t.last, t.confirmed = &rend, false
		}
	}
	return t.apply(ctx, r.Full, prev)
}

// records are the held entries as the template sees them, sorted by key.
func (t *Target) records() []record {
	if t.order == nil {
		t.order = slices.Sorted(maps.Keys(t.held))
	}
	out := make([]record, len(t.order))
	for i, k := range t.order {
		out[i] = t.recs[k]
	}
	return out
}

// apply makes the file equal to the last render: compare, check, swap,
// reload.
func (t *Target) apply(ctx context.Context, full bool, prev []byte) []node.Entry {
	path := t.s.path
	var cur []byte
	var existed bool
	if !full && prev != nil {
		// Between full reconciles the file holds what was last written
		// (prev): a render that differs from it needs no read to know.
		cur, existed = prev, true
	} else {
		var err error
		if cur, existed, err = readCurrent(path); err != nil {
			t.problem("write", err, "cannot read the file; will retry at the next change or resync")
			return nil
		}
	}
	data := t.last.data
	if existed && bytes.Equal(cur, data) {
		t.confirmed, t.failedCheck = true, ""
		t.met.renders.WithLabelValues("unchanged").Inc()
		t.problem("check", nil, "")
		t.problem("write", nil, "")
		return nil
	}
	restoring := t.confirmed
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	if digest == t.failedCheck {
		return nil // refused already: wait for the next change
	}
	tmp, err := writeCandidate(path, data, t.s.mode, t.own)
	if err != nil {
		t.problem("write", err, "cannot write the candidate; will retry at the next change or resync")
		return nil
	}
	check := "none"
	if len(t.s.check) > 0 {
		if err := runCommand(ctx, t.s.check, tmp, t.s.checkTimeout); err != nil {
			_ = os.Remove(tmp)
			if ctx.Err() != nil {
				return nil // stopping: not the candidate's fault
			}
			t.failedCheck = digest
			t.met.checks.WithLabelValues("failed").Inc()
			t.met.renders.WithLabelValues("refused").Inc()
			t.problem("check", err, "check_command refused the candidate; the file is kept")
			t.decide(digest, len(data), "failed", "none", restoring)
			return nil
		}
		t.met.checks.WithLabelValues("ok").Inc()
		check = "ok"
	}
	t.failedCheck = ""
	t.problem("check", nil, "")
	if err := swap(tmp, path, t.s.backup, cur, existed, t.s.mode, t.own); err != nil {
		t.problem("write", err, "cannot swap the file; will retry at the next change or resync")
		return nil
	}
	t.problem("write", nil, "")
	t.confirmed, t.lastDigest = true, digest
	t.met.renders.WithLabelValues("written").Inc()
	if restoring {
		t.met.restored.Inc()
		t.env.Logger.Warn("file changed by someone else; restored", "file", path)
	}
	t.env.Logger.Info("file written", "file", path, "bytes", len(data), "digest", digest[:12], "records", len(t.held))
	t.reload = reloadState{}
	reload := "delayed"
	if !t.spaced() {
		reload = t.runReload(ctx)
	}
	t.decide(digest, len(data), check, reload, restoring)
	return []node.Entry{{Key: node.Key(path), Value: cty.ObjectVal(map[string]cty.Value{"sha256": cty.StringVal(digest),
		"bytes": cty.NumberIntVal(int64(len(data))), "records": cty.NumberIntVal(int64(len(t.held))),
		"check": cty.StringVal(check), "reload": cty.StringVal(reload)})}}
}

// runReload reloads the file's reader; on failure it schedules a retry.
// It returns the outcome for the audit: ok, failed or none.
func (t *Target) runReload(ctx context.Context) string {
	var err error
	if len(t.s.reload) == 0 && t.s.signal == 0 {
		return "none"
	}
	switch {
	case len(t.s.reload) > 0:
		err = runCommand(ctx, t.s.reload, t.s.path, t.s.reloadTimeout)
	case t.s.signal != 0:
		err = signalPid(t.s.pidFile, t.s.signal)
	default:
		return "none"
	}
	t.lastReload = t.env.Now()
	if err == nil {
		t.met.reloads.WithLabelValues("ok").Inc()
		t.reload = reloadState{}
		t.problem("reload", nil, "")
		return "ok"
	}
	if ctx.Err() != nil {
		return "failed"
	}
	t.met.reloads.WithLabelValues("failed").Inc()
	t.reload.pending = true
	wait := reloadBackoff.Delay(t.reload.attempts)
	t.reload.due = t.env.Now().Add(wait)
	t.reload.attempts++
	t.problem("reload", err, "reload failed; retrying in "+wait.Round(time.Millisecond).String())
	select {
	case t.wake <- struct{}{}:
	default:
	}
	return "failed"
}

// reloadBackoff is the wait between failed reloads: from 1s to 5m, as
// a reload command is heavier than a write.
var reloadBackoff = backoff.Policy{Base: time.Second, Cap: 5 * time.Minute}

// retryLoop retries a failed reload when its backoff is due.
func (t *Target) retryLoop(ctx context.Context) {
	defer close(t.done)
	clock := t.env.Clock
	if clock == nil {
		clock = node.WallClock{}
	}
	timer := clock.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	arm := func() {
		t.mu.Lock()
		r := t.reload
		t.mu.Unlock()
		if r.pending {
			timer.Reset(max(r.due.Sub(clock.Now()), 0))
		} else {
			timer.Stop()
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.wake:
		case <-timer.C():
			t.mu.Lock()
			if t.reload.pending && !clock.Now().Before(t.reload.due) {
				out := t.runReload(ctx)
				t.decide(t.lastDigest, len(t.last.data), "none", out, false)
			}
			t.mu.Unlock()
		}
		arm()
	}
}

// problem records stage's error (nil: the stage works again), logs it
// once with why, and sets health.
func (t *Target) problem(stage string, err error, why string) {
	if err == nil {
		if _, ok := t.problems[stage]; !ok {
			return
		}
		delete(t.problems, stage)
	} else {
		msg := t.redactor().String(err.Error())
		t.problems[stage] = msg
		t.env.Logger.Warn(why, "file", t.s.path, "op", stage, "err", msg)
	}
	t.setHealth()
}

func (t *Target) setHealth() {
	for _, stage := range []string{"render", "check", "write", "reload"} {
		if msg, ok := t.problems[stage]; ok {
			t.met.failing.Set(1)
			t.env.Health.Set(node.Degraded, stage+" failed: "+msg)
			return
		}
	}
	t.met.failing.Set(0)
	t.env.Health.Set(node.Healthy, "")
}

// redactor masks the sensitive variables of the configuration and the
// sensitive values of the records last rendered.
func (t *Target) redactor() *redact.Redactor {
	r := redact.New(t.s.secrets)
	if t.last != nil {
		r.Add(t.last.secrets)
	}
	return r
}

// decide hands the render's outcome to the audit trails: the file's
// digest and size, never its text.
func (t *Target) decide(digest string, size int, check, reload string, restored bool) {
	detail := fmt.Sprintf("rendered %s (%d bytes): check %s, reload %s", t.s.path, size, check, reload)
	t.env.Decide(node.Decision{Kind: node.DecisionFileRendered, Node: t.s.address, Detail: detail, Attrs: map[string]string{
		"file": t.s.path, "sha256": digest, "bytes": strconv.Itoa(size), "check": check, "reload": reload, "restored": strconv.FormatBool(restored)}})
}

// Describe implements node.Describer.
func (t *Target) Describe() node.TargetInfo {
	_, err := os.Stat(t.s.path)
	return node.TargetInfo{Location: t.s.path, Kind: "file", Exists: err == nil}
}

// Show implements node.Describer: the record's value as the template sees it.
func (t *Target) Show(e node.Entry) string { return showValue(e.Value) }

// Close implements node.Target: it stops the retry loop. The file stays.
func (t *Target) Close() error {
	if t.cancel != nil {
		t.cancel()
		<-t.done
		for _, c := range []prometheus.Collector{t.met.renders, t.met.checks, t.met.reloads, t.met.restored, t.met.failing} {
			t.env.Metrics.Unregister(c)
		}
	}
	return nil
}

var (
	_ node.Target    = (*Target)(nil)
	_ node.Committer = (*Target)(nil)
	_ node.Describer = (*Target)(nil)
)
