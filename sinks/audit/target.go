package audit

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"
	"k8s.io/client-go/kubernetes"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/ctyconv"
	"github.com/pipeline/pipeline/schema"
)

// Sink is a configured audit sink.
type Sink struct {
	address string
	cfg     config
	gate    *gate
	// Stdout and Now replace standard output and the clock (tests).
	Stdout io.Writer
	Now    func() time.Time
	// Clientset replaces the client the events block builds from its
	// cluster (tests).
	Clientset kubernetes.Interface
}

// Wait implements node.Gate: with fail = "closed", the other sinks of the
// graph wait with their writes from start until the trail is open, and again
// whenever a trail write fails, until one succeeds.
func (s *Sink) Wait() <-chan struct{} { return s.gate.wait() }

// Open implements node.Sink. With ModePlan it touches nothing. With ModeRun
// it never fails because of the trail: a trail that cannot be opened is
// reported in health (and holds the graph with fail = "closed"), and the
// target retries opening it every fsync_interval and before each write.
func (s *Sink) Open(_ context.Context, env node.Env, mode node.Mode) (node.Target, error) {
	t := &target{address: s.address, cfg: &s.cfg, gate: s.gate, env: env, log: env.Logger,
		plan: mode == node.ModePlan, gen: max(env.ConfigGeneration, 1)}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	var err error
	if t.ledger, err = readLedger(s.cfg.path, s.address); err != nil {
		// Not fatal: every wanted key is then written once more.
		t.log.Warn("audit trail not read back; unchanged keys will be written again", "err", err)
		t.ledger = ledger{}
	}
	now := s.Now
	if now == nil {
		now = time.Now
	}
	t.tr = &trail{cfg: &s.cfg, addr: s.address, now: now, gen: t.gen}
	t.stdout = s.Stdout
	if t.stdout == nil {
		t.stdout = os.Stdout
	}
	if t.plan {
		return t, nil
	}
	if err := t.registerMetrics(); err != nil {
		return nil, fmt.Errorf("%s: register metrics: %w", s.address, err)
	}
	t.startEvents(s)
	t.mu.Lock()
	t.settle(t.ensureOpen(), 0)
	t.mu.Unlock()
	t.stop, t.done = make(chan struct{}), make(chan struct{})
	go t.tick()
	return t, nil
}

// target appends lines for the entries and decisions it receives. mu
// serialises the engine's sink loop, the engine's decision delivery and the
// flush ticker.
type target struct {
	address string
	cfg     *config
	gate    *gate
	env     node.Env
	log     *slog.Logger
	stdout  io.Writer
	plan    bool

	mu      sync.Mutex
	tr      *trail
	gen     uint64 // config generation of the last decision seen
	failing bool
	lastErr error
	owed    []line // lines not written yet, oldest first
	ledger  ledger // what the trail says each key holds, queued lines included (state.go)
	counted trailEvents
	met     metrics
	head    atomic.Uint64

	events *emitter // nil without an events block

	stop, done chan struct{}
}

// startEvents starts the Kubernetes Events of the events block. Events are
// best effort: without a client, the trail goes on and the error is logged.
func (t *target) startEvents(s *Sink) {
	ec := s.cfg.events
	if ec == nil {
		return
	}
	cs := s.Clientset
	var closeIdle func()
	if cs == nil {
		var err error
		if cs, closeIdle, err = newClientset(ec); err != nil {
			t.met.eventFailures.Inc()
			t.log.Error("audit kubernetes events disabled: no client", "err", err)
			return
		}
	}
	t.events = newEmitter(ec, cs, t.log, t.met.events, t.met.eventFailures)
	t.events.closeIdle = closeIdle
}

type metrics struct {
	lines, failures, rotations, removed prometheus.Counter
	events, eventFailures               prometheus.Counter
}

func (t *target) registerMetrics() error {
	t.met = metrics{
		lines:     prometheus.NewCounter(prometheus.CounterOpts{Name: "pipeline_sink_audit_lines_total", Help: "Lines appended to the audit trail."}),
		failures:  prometheus.NewCounter(prometheus.CounterOpts{Name: "pipeline_sink_audit_write_failures_total", Help: "Lines the audit trail failed to write (they are retried)."}),
		rotations: prometheus.NewCounter(prometheus.CounterOpts{Name: "pipeline_sink_audit_rotations_total", Help: "Trail files rotated."}),
		removed:   prometheus.NewCounter(prometheus.CounterOpts{Name: "pipeline_sink_audit_files_removed_total", Help: "Rotated trail files deleted by retention."}),
		events: prometheus.NewCounter(prometheus.CounterOpts{Name: "pipeline_sink_audit_events_total",
			Help: "Kubernetes Events handed to the event recorder (its spam filter may still drop some)."}),
		eventFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "pipeline_sink_audit_event_failures_total",
			Help: "Kubernetes Event API calls that failed (Events are best effort)."}),
	}
	head := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "pipeline_sink_audit_head_seq",
		Help: "Seq of the newest line of the audit trail."}, func() float64 { return float64(t.head.Load()) })
	if t.env.Metrics == nil {
		return nil
	}
	for _, c := range []prometheus.Collector{t.met.lines, t.met.failures, t.met.rotations, t.met.removed, t.met.events, t.met.eventFailures, head} {
		if err := t.env.Metrics.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Prepare implements node.Target. Data is the digest of the value as its
// line would show it, so that the engine compares it with the ledger's.
func (t *target) Prepare(r node.Record) (node.Entry, error) {
	_, _, sum := t.render(r.Value)
	return node.Entry{Key: r.Key, Value: r.Value, Data: sum[:]}, nil
}

// Actual implements node.Target: what the trail says each key holds (the
// ledger), so that only changes are written.
func (t *target) Actual(context.Context) ([]node.Entry, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ledger.entries(), nil
}

// Update implements node.Target: one upsert line per entry.
func (t *target) Update(_ context.Context, batch []node.Entry) { t.writeEntries(opUpsert, batch) }

// Delete implements node.Target: one delete line per entry.
func (t *target) Delete(_ context.Context, batch []node.Entry) { t.writeEntries(opDelete, batch) }

func (t *target) writeEntries(op string, batch []node.Entry) {
	if t.plan || len(batch) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	room := maxOwed - len(t.owed)
	for i := range batch {
		batch[i].Err = nil
		if i >= room {
			batch[i].Err = fmt.Errorf("%s: %s %s: %d lines wait for the trail to accept writes: %w", t.address, op, batch[i].Key, maxOwed, t.lastErr)
			continue
		}
		l, sum := t.entryLine(op, batch[i])
		t.owed = append(t.owed, l)
		if op == opDelete {
			delete(t.ledger, batch[i].Key)
		} else {
			t.ledger[batch[i].Key] = sum
		}
	}
	t.drain(min(len(batch), max(room, 0)))
}

// RecordDecision implements node.DecisionRecorder. A decision the trail
// cannot take yet waits with the other owed lines.
func (t *target) RecordDecision(d node.Decision) error {
	if t.plan {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if d.ConfigGeneration > 0 {
		t.gen, t.tr.gen = d.ConfigGeneration, d.ConfigGeneration
	}
	if len(t.owed) >= maxOwed {
		return fmt.Errorf("%s: record %s: %d lines wait for the trail to accept writes: %w", t.address, d.Kind, maxOwed, t.lastErr)
	}
	t.owed = append(t.owed, t.decisionLine(d))
	t.drain(1)
	return nil
}

// maxOwed bounds the lines kept in memory while the trail cannot be written;
// beyond it, entries fail and the engine retries them with backoff.
const maxOwed = 100_000

// drain writes the owed lines in order, and flushes with fsync = "always".
// added is how many of them are new, for the failure count. The trail's
// state (health, gate) follows the outcome: the gate opens only when every
// owed line is written.
func (t *target) drain(added int) {
	err := t.ensureOpen()
	for err == nil && len(t.owed) > 0 {
		if err = t.tr.append(&t.owed[0]); err == nil {
			t.events.emit(&t.owed[0], t.gen)
			t.owed[0] = line{}
			t.owed = t.owed[1:]
		}
	}
	if len(t.owed) == 0 {
		t.owed = nil
	}
	if err == nil && t.cfg.fsync == fsyncAlways {
		err = t.tr.flush()
	}
	t.settle(err, added)
}

// ensureOpen opens the trail when it is not open and writes the open line.
func (t *target) ensureOpen() error {
	if t.tr.isOpen() {
		return nil
	}
	if err := t.tr.open(t.stdout); err != nil {
		return err
	}
	l := line{op: opOpen, time: t.tr.now(), node: t.address, gen: t.gen, reason: "sink opened the trail"}
	if err := t.tr.append(&l); err != nil {
		t.tr.close()
		return err
	}
	t.events.emit(&l, t.gen)
	t.publish()
	return nil
}

// settle updates metrics, health and the gate after a write.
func (t *target) settle(err error, failed int) {
	t.publish()
	if err != nil {
		t.failed(err, failed)
		return
	}
	if t.failing {
		t.log.Info("audit trail writable again")
	}
	t.failing = false
	t.gate.open()
	if t.env.Health != nil {
		t.env.Health.Set(node.Healthy, "")
	}
}

func (t *target) failed(err error, lines int) {
	t.lastErr = err
	if t.met.failures != nil {
		t.met.failures.Add(float64(lines))
	}
	if !t.failing {
		t.log.Error("audit trail write failed", "err", err, "count", lines)
	}
	t.failing = true
	t.gate.shut()
	if t.env.Health != nil {
		t.env.Health.Set(node.Degraded, "cannot write the audit trail: "+err.Error())
	}
}

// publish moves the trail's counts to the metrics.
func (t *target) publish() {
	t.head.Store(t.tr.seq)
	if t.met.lines == nil {
		return
	}
	ev := t.tr.events
	t.met.lines.Add(float64(ev.lines - t.counted.lines))
	t.met.rotations.Add(float64(ev.rotations - t.counted.rotations))
	t.met.removed.Add(float64(ev.removed - t.counted.removed))
	t.counted = ev
}

// tick flushes every fsync_interval (fsync = "interval"; the checkpoint for
// every mode), applies max_age, and retries opening a trail that failed.
func (t *target) tick() {
	defer close(t.done)
	tk := time.NewTicker(t.cfg.interval)
	defer tk.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tk.C:
		}
		t.mu.Lock()
		if t.failing || len(t.owed) > 0 {
			t.drain(0)
		}
		err := t.tr.flush()
		if err == nil && t.cfg.maxAge > 0 {
			err = t.tr.retention()
		}
		if err != nil {
			t.failed(err, 0)
		} else {
			t.publish()
		}
		t.mu.Unlock()
	}
}

// Close implements node.Target: it stops the ticker, flushes and closes.
func (t *target) Close() error {
	if t.plan {
		return nil
	}
	close(t.stop)
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.owed) > 0 {
		t.drain(0)
	}
	t.events.close()
	if n := len(t.owed); n > 0 {
		t.log.Error("audit lines lost: the trail could not take them before the sink stopped", "count", n, "err", t.lastErr)
	}
	if err := t.tr.close(); err != nil {
		return fmt.Errorf("%s: close: %w", t.address, err)
	}
	return nil
}

// entryLine is the line of one applied change: the one place a record
// becomes a line. sum is the digest of its value (zero for none).
func (t *target) entryLine(op string, e node.Entry) (l line, sum [sha256.Size]byte) {
	l = line{op: op, time: t.tr.now(), node: t.address, key: scrubString(e.Key, t.cfg.secrets), gen: t.gen,
		reason: "desired by the input"}
	if op == opDelete {
		l.reason = "no longer desired by the input"
	}
	if e.Value == cty.NilVal {
		return l, sum
	}
	if d, ok := ledgerDigest(e); ok {
		// A delete of a key read back from the trail: its value is not
		// known, only the digest the trail holds for it.
		l.digest = d
		return l, sum
	}
	src, v, sum := t.render(e.Value)
	l.source = src
	if m, ok := t.redact("source", l.source).(map[string]any); ok {
		l.source = m
	}
	if t.cfg.values {
		l.value, l.hasVal = v, true
	} else {
		l.digest = digestText(sum)
	}
	return l, sum
}

// render is a value as its line shows it (secrets scrubbed, redact
// applied), the object it comes from (before redact, which edits in
// place) and the sha256 of v's JSON, its digest. A value that cannot be
// encoded has the digest of nothing.
func (t *target) render(val cty.Value) (src map[string]any, v any, sum [sha256.Size]byte) {
	if val == cty.NilVal {
		return nil, nil, sum
	}
	v = scrub(ctyconv.FromCty(schema.Masked(val)), t.cfg.secrets)
	src = sourceRef(v)
	v = t.redact("value", v)
	if b, err := json.Marshal(v); err == nil {
		sum = sha256.Sum256(b)
	}
	return src, v, sum
}

// decisionLine is the line of an engine decision.
func (t *target) decisionLine(d node.Decision) line {
	l := line{op: string(d.Kind), time: d.Time, node: d.Node, gen: d.ConfigGeneration,
		reason: scrubString(d.Detail, t.cfg.secrets)}
	if l.time.IsZero() {
		l.time = t.tr.now()
	}
	if len(d.Attrs) > 0 {
		l.detail = make(map[string]any, len(d.Attrs))
		for k, v := range d.Attrs {
			l.detail[k] = scrubString(v, t.cfg.secrets)
		}
		if m, ok := t.redact("detail", l.detail).(map[string]any); ok {
			l.detail = m
		}
	}
	return l
}

func (t *target) redact(field string, v any) any {
	for _, p := range t.cfg.redact {
		if p.field == field {
			v = remove(v, p.steps)
		}
	}
	return v
}

// sourceRef is the Kubernetes object a value comes from, when the value is
// an object (or holds its metadata).
func sourceRef(v any) map[string]any {
	m, _ := v.(map[string]any)
	meta, _ := m["metadata"].(map[string]any)
	if meta == nil {
		return nil
	}
	out := map[string]any{}
	for _, k := range []string{"namespace", "name", "uid", "resourceVersion"} {
		if s, ok := meta[k].(string); ok && s != "" {
			out[k] = s
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

var (
	_ node.Sink             = (*Sink)(nil)
	_ node.Gate             = (*Sink)(nil)
	_ node.Target           = (*target)(nil)
	_ node.DecisionRecorder = (*target)(nil)
)
