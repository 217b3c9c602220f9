package template

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
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
	"github.com/pipeline/pipeline/internal/atomicfile"
	"github.com/pipeline/pipeline/internal/backoff"
	"github.com/pipeline/pipeline/internal/haproxy"
	"github.com/pipeline/pipeline/internal/redact"
	"github.com/pipeline/pipeline/schema"
)

// Target is one rendered file. Update and Delete record the entries;
// Commit, at the end of each round once the input synced, makes the file
// equal to their render (apply), once per round, and hands back the
// round's write for tap and the entries the file does not hold as
// wanted, with the reason, as the round's failures.
//
// The fields above mu belong to the sink loop's goroutine (Update,
// Delete, Commit, Actual, Explain, PlanFile); mu guards those the reload
// retry loop shares, and is never held across a command or a file write.
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

	// entries are what Update and Delete left: the document the file
	// is the render of once written.
	entries map[node.Key]node.Entry
	recs    table             // each entry as the template sees it, sorted by key
	secret  map[node.Key]bool // entries whose value is sensitive
	changed bool              // entries changed since the last render
	last    *rendering        // the render of entries; nil before the first and after a failed one
	// renderErr is why entries do not render (nil: it does, or it was
	// not tried since it changed).
	renderErr error
	// disk is what the file holds and the entries it is the render of, as
	// last read or written; nil when the file holds none of our renders
	// (missing, edited by someone else, or not read yet).
	disk *fileState
	// unsettled are the keys entries changed at since disk.entries was
	// last made equal to entries: a write updates disk.entries at them
	// rather than copying every entry.
	unsettled map[node.Key]struct{}
	// ours says the file held one of our renders since the last write, so
	// finding it different means someone else changed it.
	ours bool
	// refused is the last candidate refused for its content (check_command
	// failed, not timed out): the same bytes are not checked again.
	refused *refusal
	tapped  []node.Entry // this round's writes, for Commit to return

	// The state file (state.go). fresh says the target has neither read
	// nor written anything yet: its first Actual takes the entries from
	// the state file. unknown are the entries taken from it whose
	// sensitive value it lists as a digest only (kept with a placeholder
	// until the input sends the value again); seeded says entries is still
	// exactly what it listed, so the file is still their render.
	fresh   bool
	unknown map[node.Key]string
	seeded  bool
	state   *stateWriter

	// With a runtime block: paths says how each entry's last change
	// reached the program (explain), why why the change under way is not
	// a runtime update, and running is the file on disk parsed
	// (runningDigest's), kept from one runtime update to the next.
	paths         map[node.Key]via
	why           string
	running       *haproxy.Config
	runningDigest string

	mu         sync.Mutex
	problems   map[string]string // stage -> error, for health and explain
	reload     reloadState
	reloading  bool      // a reload command or signal is under way
	lastReload time.Time // when the last reload was made, whatever its outcome
	shown      shownFile // the file the last reload concerns
	masks      []string  // the sensitive values of the last good render
}

// fileState is the file as pipeline last read or wrote it.
type fileState struct {
	data    []byte
	digest  string
	entries map[node.Key]node.Entry // the entries data is the render of
}

// refusal is a candidate check_command refused, and why.
type refusal struct {
	digest string
	err    error
}

// shownFile is what a command's failure may say about the file it read:
// the masking of its secrets and whether its output may be shown.
type shownFile struct {
	digest  string
	size    int
	secrets []string
	show    bool
}

// reloadState is a reload that failed and waits for its retry.
type reloadState struct {
	pending  bool
	attempts int
	due      time.Time
}

// spacedLocked reports whether a reload now would come within
// reload_interval of the last one; it then schedules it for when that has
// passed. t.mu is held.
func (t *Target) spacedLocked() bool {
	if t.lastReload.IsZero() || t.s.reloadGap <= 0 {
		return false
	}
	due := t.lastReload.Add(t.s.reloadGap)
	if !t.env.Now().Before(due) {
		return false
	}
	t.reload = reloadState{pending: true, due: due, attempts: t.reload.attempts}
	t.poke()
	return true
}

// poke wakes the retry loop to look at the reload state again.
func (t *Target) poke() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

type metrics struct {
	renders  *prometheus.CounterVec
	checks   *prometheus.CounterVec
	reloads  *prometheus.CounterVec
	restored prometheus.Counter
	failing  prometheus.Gauge
	runtime  *prometheus.CounterVec
}

// Open implements node.Sink. ModePlan reads nothing and starts nothing;
// ModeRun resolves owner and group and starts the reload retry loop.
func (s *Sink) Open(_ context.Context, env node.Env, mode node.Mode) (node.Target, error) {
	t := &Target{s: s, env: env, plan: mode == node.ModePlan, entries: map[node.Key]node.Entry{}, unsettled: map[node.Key]struct{}{}, secret: map[node.Key]bool{}, problems: map[string]string{},
		fresh: true, unknown: map[node.Key]string{}, state: newStateWriter(s.path)}
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
			Help: "Renders of the file by result: written, unchanged (equal to the file on disk), error (template error), refused (check_command failed, or over max_size)."}, []string{"result"}),
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pipeline_sink_template_checks_total",
			Help: "Runs of check_command by result (ok, failed)."}, []string{"result"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pipeline_sink_template_reloads_total",
			Help: "Reloads (reload_command or reload_signal) by result (ok, failed)."}, []string{"result"}),
		restored: prometheus.NewCounter(prometheus.CounterOpts{Name: "pipeline_sink_template_restored_total",
			Help: "Times the file was found changed or removed by someone else and restored."}),
		failing: prometheus.NewGauge(prometheus.GaugeOpts{Name: "pipeline_sink_template_failing",
			Help: "1 while the file is not what the input says (render, check, write or reload failing), else 0."}),
		runtime: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pipeline_sink_template_runtime_updates_total",
			Help: "Changes sent over the runtime block's socket instead of a reload, by result: ok (applied and verified; the file written with no check and no reload), fallback (an error, mismatch or timeout: checked, swapped and reloaded instead)."}, []string{"result"}),
	}
	for _, c := range []prometheus.Collector{t.met.renders, t.met.checks, t.met.reloads, t.met.restored, t.met.failing, t.met.runtime} {
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

// Actual implements node.Target: the entries whose render the file on
// disk holds, read from the file (a regular file of at most max_size,
// never blocking). A file that holds none of pipeline's renders (missing,
// edited by someone else, not compared yet) holds no entries: every
// wanted one is then "wanted, not in the target", and the full reconcile
// that follows restores the file. The first read of a new target (after
// a restart, or a reload that rebuilt the sink) takes the entries from
// the state file when it describes the file on disk (restore): the
// target then holds them, so that the deletes of those the input no
// longer wants are judged by the deletion brake.
func (t *Target) Actual(context.Context) ([]node.Entry, error) {
	d, err := readRegular(t.s.path, t.s.maxSize)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.s.path, err)
	}
	if t.fresh {
		t.fresh = false
		if d.existed && t.disk == nil {
			d = t.restore(d)
		}
	}
	if !d.existed || t.disk == nil || !bytes.Equal(d.data, t.disk.data) {
		t.disk = nil
		return nil, nil
	}
	out := make([]node.Entry, 0, len(t.disk.entries))
	for _, e := range t.disk.entries {
		out = append(out, e)
	}
	return out, nil
}

// Update implements node.Target: it records the entries, and writes
// nothing: Commit applies the round's change once, whatever the round's
// Updates and Deletes were.
func (t *Target) Update(_ context.Context, batch []node.Entry) {
	t.fresh = false
	for _, e := range batch {
		if old, ok := t.entries[e.Key]; ok && old.Value.RawEquals(e.Value) {
			continue
		}
		t.state.dirty = true
		if d, ok := t.unknown[e.Key]; ok {
			// The value the state file knew by its digest: the same
			// one leaves the file the render of entries.
			delete(t.unknown, e.Key)
			if got, err := valueDigest(t.state.salt, e.Value); err != nil || got != d {
				t.seeded = false
			}
		} else {
			t.seeded = false
		}
		t.entries[e.Key] = node.Entry{Key: e.Key, Value: e.Value}
		t.unsettled[e.Key] = struct{}{}
		t.recs.set(t.s.newRecord(e))
		if schema.IsSensitive(e.Value) {
			t.secret[e.Key] = true
		} else {
			delete(t.secret, e.Key)
		}
		t.changed = true
	}
}

// Delete implements node.Target: as Update.
func (t *Target) Delete(_ context.Context, batch []node.Entry) {
	t.fresh = false
	for _, e := range batch {
		if _, ok := t.entries[e.Key]; ok {
			delete(t.entries, e.Key)
			delete(t.unknown, e.Key)
			t.state.dirty = true
			t.seeded = false
			t.unsettled[e.Key] = struct{}{}
			t.recs.remove(e.Key)
			delete(t.secret, e.Key)
			t.changed = true
		}
	}
}

// Commit implements node.Document: once the input synced, it applies
// the round's change (apply: one render, compare, check, swap and reload
// per round, however many Updates and Deletes the round made), comparing
// with the disk at a full reconcile. It returns the round's write for tap
// and, with Err set, every entry whose write failed: each key the file
// does not hold as entries has it (its wanted entry), and each deleted key the file
// still holds (the entry it holds).
func (t *Target) Commit(ctx context.Context, r node.Round) []node.Entry {
	if t.plan || !r.Synced {
		return nil
	}
	var err error
	if r.Full || t.unwritten() {
		err = t.apply(ctx, r.Full)
	}
	out := t.tapped
	t.tapped = nil
	if err != nil && ctx.Err() == nil {
		out = append(out, t.failed(err)...)
	}
	return out
}

// unwritten reports whether the file may not hold the render of entries: it
// changed since the last render, the last render or write failed, or
// the file holds none of our renders.
func (t *Target) unwritten() bool {
	return t.changed || t.last == nil || t.disk == nil || len(t.unsettled) > 0
}

// failed is every entry the file does not hold as entries has it, after a write
// that failed with err: every entry when the file holds none of our
// renders, else the keys changed since it last did (unsettled) whose
// entry differs from the file's.
func (t *Target) failed(err error) []node.Entry {
	var out []node.Entry
	if t.disk == nil {
		for _, k := range slices.Sorted(maps.Keys(t.entries)) {
			out = append(out, node.Entry{Key: k, Value: t.entries[k].Value, Err: err})
		}
		return out
	}
	for _, k := range slices.Sorted(maps.Keys(t.unsettled)) {
		h, wanted := t.entries[k]
		d, in := t.disk.entries[k]
		switch {
		case wanted && (!in || !d.Same(h)):
			out = append(out, node.Entry{Key: k, Value: h.Value, Err: err})
		case !wanted && in:
			out = append(out, node.Entry{Key: k, Value: d.Value, Err: err})
		}
	}
	return out
}

// rendered renders entries when they changed since the last render.
func (t *Target) rendered() (*rendering, error) {
	if !t.changed && (t.last != nil || t.renderErr != nil) {
		return t.last, t.renderErr
	}
	t.changed = false
	rend, err := t.s.renderRecords(t.recs.sorted(), len(t.secret) > 0)
	if err != nil {
		t.last, t.renderErr = nil, err
		result := "error"
		if errors.Is(err, errTooLarge) {
			result = "refused" // refused like a failed check
		}
		t.met.renders.WithLabelValues(result).Inc()
		return nil, t.problem("render", err, "render failed; the file is kept")
	}
	t.renderErr = nil
	t.mu.Lock()
	t.masks = rend.secrets
	t.mu.Unlock()
	t.problem("render", nil, "")
	rend.sensitive = len(rend.secrets) > 0 || containsAny(rend.data, t.s.secrets)
	t.last = &rend
	return t.last, nil
}

// apply makes the file equal to the render of entries: render, compare with
// the file, then (swap) check, back up, swap and reload. It is the one
// place a change reaches the file. Between full reconciles the file is
// taken to hold what was last written; full reads it. The error is what
// keeps the file from holding the render, as shown (masked).
func (t *Target) apply(ctx context.Context, full bool) error {
	if len(t.unknown) > 0 {
		return t.keepRestored(full)
	}
	rend, err := t.rendered()
	if err != nil {
		return err
	}
	data := rend.data
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	path := t.s.path
	if full || t.disk == nil || t.s.backup {
		cur, err := readRegular(path, t.s.maxSize)
		if err != nil {
			return t.problem("write", err, "cannot read the file; will retry")
		}
		if t.disk != nil && !bytes.Equal(cur.data, t.disk.data) {
			t.disk = nil // someone else wrote it
		}
		if cur.existed && bytes.Equal(cur.data, data) {
			t.settled(rend, digest)
			t.saveState(digest)
			t.met.renders.WithLabelValues("unchanged").Inc()
			return nil
		}
		if err := t.change(ctx, rend, digest, &cur); err != nil {
			return err
		}
	} else {
		if t.disk.digest == digest {
			t.settled(rend, digest) // back to what the file holds
			t.saveState(digest)
			return nil
		}
		if err := t.change(ctx, rend, digest, nil); err != nil {
			return err
		}
	}
	return nil
}

// settled records that the file holds rend (digest), the render of entries.
func (t *Target) settled(rend *rendering, digest string) {
	var entries map[node.Key]node.Entry
	if t.disk == nil {
		entries = maps.Clone(t.entries)
	} else {
		entries = t.disk.entries
		for k := range t.unsettled {
			if e, ok := t.entries[k]; ok {
				entries[k] = e
			} else {
				delete(entries, k)
			}
		}
	}
	clear(t.unsettled)
	t.disk = &fileState{data: rend.data, digest: digest, entries: entries}
	t.ours, t.refused = true, nil
	t.problem("check", nil, "")
	t.problem("write", nil, "")
}

// swap checks rend, backs up cur (when read and backup is on), renames the
// candidate over the file and reloads. No lock is held meanwhile.
func (t *Target) swap(ctx context.Context, rend *rendering, digest string, cur *onDisk) error {
	if t.refused != nil && t.refused.digest == digest {
		return t.refused.err // refused already: wait for the next change
	}
	path := t.s.path
	tmp, err := atomicfile.Create(path, rend.data, atomicfile.Options{Mode: t.s.mode, UID: t.own.uid, GID: t.own.gid})
	if err != nil {
		return t.problem("write", err, "cannot write the candidate; will retry")
	}
	check := "none"
	if len(t.s.check) > 0 {
		if err := runCommand(ctx, t.s.check, tmp.Name, t.s.checkTimeout); err != nil {
			tmp.Remove()
			if ctx.Err() != nil {
				return fmt.Errorf("stopped while check_command ran: %w", ctx.Err())
			}
			t.met.checks.WithLabelValues("failed").Inc()
			t.met.renders.WithLabelValues("refused").Inc()
			shown := t.commandError("check_command refused the candidate (not written)", err, rend)
			if !errors.Is(err, errTimeout) {
				t.refused = &refusal{digest: digest, err: shown}
			}
			t.problem("check", shown, "check_command refused the candidate; the file is kept")
			t.decide(digest, len(rend.data), "failed", "none", false)
			return shown
		}
		t.met.checks.WithLabelValues("ok").Inc()
		check = "ok"
	}
	if t.s.backup && cur != nil && cur.existed {
		if err := backup(path, *cur); err != nil {
			tmp.Remove()
			return t.problem("write", err, "cannot back the file up; will retry")
		}
	}
	// The state file goes first, naming the new file's digest: a crash or
	// a failed rename before the file is swapped leaves a state file
	// whose digest is not the file's, which the next start ignores (as a
	// state file not written at all). Whatever the order, the digest is
	// what makes a pair that does not belong together harmless; this one
	// also lets a reader that raced the swap (read the old file, then the
	// new state) find the match by reading the file once more (restore).
	t.saveState(digest)
	if err := tmp.Commit(); err != nil {
		return t.problem("write", err, "cannot swap the file; will retry")
	}
	restoring := t.ours && t.disk == nil
	if t.s.runtime != nil {
		t.note(via{detail: t.why, at: t.env.Now()})
	}
	t.settled(rend, digest)
	t.met.renders.WithLabelValues("written").Inc()
	if restoring {
		t.met.restored.Inc()
		t.env.Logger.Warn("file changed by someone else; restored", "file", path)
	}
	t.env.Logger.Info("file written", "file", path, "bytes", len(rend.data), "digest", digest[:12], "records", len(t.entries))
	t.mu.Lock()
	t.shown = shownFile{digest: digest, size: len(rend.data), secrets: rend.secrets, show: t.s.showOutput || !rend.sensitive}
	t.reload = reloadState{}
	delayed := t.spacedLocked()
	t.mu.Unlock()
	reload := "delayed"
	if !delayed {
		reload = t.runReload(ctx)
	}
	t.decide(digest, len(rend.data), check, reload, restoring)
	t.tapped = append(t.tapped, node.Entry{Key: node.Key(path), Value: cty.ObjectVal(map[string]cty.Value{"sha256": cty.StringVal(digest),
		"bytes": cty.NumberIntVal(int64(len(rend.data))), "records": cty.NumberIntVal(int64(len(t.entries))),
		"check": cty.StringVal(check), "reload": cty.StringVal(reload)})})
	return nil
}

// commandError is a failed command's error as it may be shown: its
// output only when show_command_output allows it for this file, every
// secret's exact text masked.
func (t *Target) commandError(what string, err error, rend *rendering) error {
	return errors.New(what + ": " + t.commandText(err, shownFile{secrets: rend.secrets, show: t.s.showOutput || !rend.sensitive}))
}

func (t *Target) commandText(err error, f shownFile) string {
	red := redact.New(t.s.secrets)
	red.Add(f.secrets)
	var ce *cmdError
	if !errors.As(err, &ce) {
		return red.String(err.Error())
	}
	msg := red.String(ce.Error())
	switch {
	case ce.output == "":
	case f.show:
		msg += ": " + red.String(ce.output)
	default:
		msg += " (output withheld: the file holds a sensitive value; show_command_output = true shows it)"
	}
	return msg
}

func containsAny(data []byte, secrets []string) bool {
	for _, s := range secrets {
		if s != "" && bytes.Contains(data, []byte(s)) {
			return true
		}
	}
	return false
}

// runReload reloads the file's reader, bounded by ctx and reload_timeout,
// with no lock held while it runs; on failure it schedules a retry. A
// reload already under way (the retry loop's) makes this one a retry due
// now. It returns the outcome for the audit: ok, failed, delayed or none.
func (t *Target) runReload(ctx context.Context) string {
	if len(t.s.reload) == 0 && t.s.signal == 0 {
		return "none"
	}
	t.mu.Lock()
	if t.reloading {
		t.reload = reloadState{pending: true, due: t.env.Now(), attempts: t.reload.attempts}
		t.poke()
		t.mu.Unlock()
		return "delayed"
	}
	t.reloading = true
	shown := t.shown
	t.mu.Unlock()
	var err error
	if len(t.s.reload) > 0 {
		err = runCommand(ctx, t.s.reload, t.s.path, t.s.reloadTimeout)
	} else {
		err = signalPid(t.s.pidFile, t.s.pidProgram, t.s.signal)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reloading = false
	t.lastReload = t.env.Now()
	if err == nil {
		t.met.reloads.WithLabelValues("ok").Inc()
		t.reload = reloadState{}
		t.problemLocked("reload", nil, "")
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
	t.problemLocked("reload", errors.New(t.commandText(err, shown)), "reload failed; retrying in "+wait.Round(time.Millisecond).String())
	t.poke()
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
			due := t.reload.pending && !clock.Now().Before(t.reload.due)
			if due {
				t.reload.pending = false
			}
			shown := t.shown
			t.mu.Unlock()
			if due {
				out := t.runReload(ctx)
				t.decide(shown.digest, shown.size, "none", out, false)
			}
		}
		arm()
	}
}

// problem records stage's error (nil: the stage works again), logs it
// once with why, sets health, and returns the error as shown: masked.
func (t *Target) problem(stage string, err error, why string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.problemLocked(stage, err, why)
}

func (t *Target) problemLocked(stage string, err error, why string) error {
	if err == nil {
		if _, ok := t.problems[stage]; ok {
			delete(t.problems, stage)
			t.setHealth()
		}
		return nil
	}
	msg := t.redactor().String(err.Error())
	t.problems[stage] = msg
	t.env.Logger.Warn(why, "file", t.s.path, "op", stage, "err", msg)
	t.setHealth()
	return errors.New(msg)
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
// sensitive values of the records last rendered and last written. t.mu
// is held.
func (t *Target) redactor() *redact.Redactor {
	r := redact.New(t.s.secrets)
	r.Add(t.shown.secrets)
	r.Add(t.masks)
	return r
}

// decide hands the render's outcome to the audit trails: the file's
// digest and size, never its text.
func (t *Target) decide(digest string, size int, check, reload string, restored bool) {
	detail := fmt.Sprintf("rendered %s (%d bytes): check %s, reload %s", t.s.path, size, check, reload)
	attrs := map[string]string{"file": t.s.path, "sha256": digest, "bytes": strconv.Itoa(size), "check": check, "reload": reload,
		"restored": strconv.FormatBool(restored)}
	if t.s.runtime != nil {
		// With a runtime block, say why this change was not one.
		detail += "; not a runtime update: " + t.why
		attrs["via"], attrs["reason"] = "reload", t.why
	}
	t.env.Decide(node.Decision{Kind: node.DecisionFileRendered, Node: t.s.address, Detail: detail, Attrs: attrs})
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
		for _, c := range []prometheus.Collector{t.met.renders, t.met.checks, t.met.reloads, t.met.restored, t.met.failing, t.met.runtime} {
			t.env.Metrics.Unregister(c)
		}
	}
	return nil
}

var (
	_ node.Target    = (*Target)(nil)
	_ node.Document  = (*Target)(nil)
	_ node.Describer = (*Target)(nil)
)
