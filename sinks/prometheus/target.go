package prometheus

import (
	"context"
	"errors"
	"fmt"
	"sync"

	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
)

// errMaxSeries fails the entry of a new series when max_series are served.
var errMaxSeries = errors.New("max_series reached: series refused")

// Target is the set of series one sink serves: the entries it holds by
// record key, read by Collect on every scrape. Update, Delete and Actual
// are called from the engine's sink loop; Collect from scrapes.
type Target struct {
	s   *Sink
	env node.Env
	// store holds what is served. Open makes it empty, so a restarted
	// process serves only what its records say.
	store *store
	// refused holds the keys whose new series max_series refused, until
	// they are written or deleted: the sink is degraded while it is not
	// empty. Only the sink loop's goroutine touches it.
	refused map[node.Key]struct{}
	met     *targetMetrics
	reg     promclient.Registerer // nil in plan mode: nothing is served
	// plan is set in plan mode: Actual reads the series a running
	// instance serves (plan.go).
	plan *planState
}

type targetMetrics struct {
	series  promclient.Gauge
	skipped promclient.Counter
	refused *promclient.CounterVec
}

// Open implements node.Sink. In ModeRun it registers the series on the
// node's registerer, which the engine serves on /metrics with node=<address>
// on every series. In ModePlan it serves nothing: the series a running
// instance serves are its process's memory, so Actual reads them from its
// /metrics when ctx names the instance (node.WithRunning, plan --against),
// and is empty otherwise, which Describe's note says.
func (s *Sink) Open(ctx context.Context, env node.Env, mode node.Mode) (node.Target, error) {
	t := &Target{s: s, env: env, store: newStore(s), refused: map[node.Key]struct{}{}, met: newTargetMetrics()}
	if mode == node.ModePlan {
		t.plan = &planState{prepared: map[node.Key]node.Entry{}, byID: map[string]node.Key{}}
		t.plan.running, t.plan.given = node.RunningFrom(ctx)
		return t, nil
	}
	cs := []promclient.Collector{t.store, t.met.series, t.met.skipped, t.met.refused}
	for i, c := range cs {
		if err := env.Metrics.Register(c); err != nil {
			for _, done := range cs[:i] {
				env.Metrics.Unregister(done)
			}
			return nil, fmt.Errorf("register the series of %s: %w", s.fam.name, err)
		}
	}
	t.reg = env.Metrics
	if env.Health != nil {
		env.Health.Set(node.Healthy, "")
	}
	return t, nil
}

func newTargetMetrics() *targetMetrics {
	m := &targetMetrics{
		series: promclient.NewGauge(promclient.GaugeOpts{Name: "pipeline_sink_prometheus_series",
			Help: "Series the sink serves."}),
		skipped: promclient.NewCounter(promclient.CounterOpts{Name: "pipeline_sink_prometheus_skipped_total",
			Help: "Records written without a series because their value is not a finite number (or a negative counter value)."}),
		refused: promclient.NewCounterVec(promclient.CounterOpts{Name: "pipeline_sink_prometheus_refused_total",
			Help: "Series refused: max_series was reached, or another key of the sink serves the same labels (duplicate)."}, []string{"reason"}),
	}
	m.refused.WithLabelValues("max_series")
	m.refused.WithLabelValues("duplicate")
	return m
}

// Prepare implements node.Target (see Sink.Prepare). In plan mode it
// remembers the entry: its labels name the key a served series belongs to.
func (t *Target) Prepare(r node.Record) (node.Entry, error) {
	e, err := t.s.Prepare(r)
	if err == nil && t.plan != nil {
		t.plan.remember(e)
	}
	return e, err
}

// Actual implements node.Target: every entry the target holds, served
// series and skipped records alike, as Prepare made them. In plan mode,
// what the running instance serves (plan.go).
func (t *Target) Actual(ctx context.Context) ([]node.Entry, error) {
	if t.plan != nil {
		return t.actualServed(ctx)
	}
	return t.store.entries(), nil
}

// Update implements node.Target. A new series beyond max_series, or one
// whose labels another key serves, fails its entry; the others are served.
func (t *Target) Update(_ context.Context, batch []node.Entry) {
	for i := range batch {
		e := &batch[i]
		sr, err := decode(e.Data, len(t.s.labels))
		if err != nil {
			e.Err = fmt.Errorf("%s: %w", e.Key, err)
			continue
		}
		switch err := t.store.put(e.Key, e.Value, sr, e.Data); {
		case errors.Is(err, errMaxSeries):
			t.met.refused.WithLabelValues("max_series").Inc()
			t.refused[e.Key] = struct{}{}
			e.Err = err
		case err != nil:
			t.met.refused.WithLabelValues("duplicate").Inc()
			e.Err = err
		default:
			delete(t.refused, e.Key)
			if sr.skip != "" {
				t.met.skipped.Inc()
				t.env.Logger.Warn("series skipped: value is not a finite number", "key", e.Key)
			}
		}
	}
	t.settle()
}

// Delete implements node.Target: the keys' series are no longer served.
func (t *Target) Delete(_ context.Context, batch []node.Entry) {
	for _, e := range batch {
		t.store.remove(e.Key)
		delete(t.refused, e.Key)
	}
	t.settle()
}

// settle publishes the series count and the health that max_series
// refusals decide.
func (t *Target) settle() {
	t.met.series.Set(float64(t.store.count()))
	if t.env.Health == nil || t.reg == nil {
		return
	}
	if n := len(t.refused); n > 0 {
		t.env.Health.Set(node.Degraded, fmt.Sprintf("max_series %d reached: %d series refused", t.s.maxSeries, n))
		return
	}
	t.env.Health.Set(node.Healthy, "")
}

// Close implements node.Target: the series are no longer served.
func (t *Target) Close() error {
	if t.reg != nil {
		for _, c := range []promclient.Collector{t.store, t.met.series, t.met.skipped, t.met.refused} {
			t.reg.Unregister(c)
		}
		t.reg = nil
	}
	return nil
}

// Describe implements node.Describer.
func (t *Target) Describe() node.TargetInfo {
	loc := fmt.Sprintf("%s %s on /metrics", t.s.fam.typ, t.s.fam.name)
	info := node.TargetInfo{Kind: "prometheus_series", Exists: true, MaxEntries: t.s.maxSeries}
	if t.plan != nil {
		if t.plan.given {
			loc += " of " + t.plan.running.MetricsURL
		}
		info.Note = t.plan.note()
	}
	info.Location = loc
	return info
}

// Show implements node.Describer: the series line.
func (t *Target) Show(e node.Entry) string { return e.Value.AsString() }

// held is one key's entry in the store.
type held struct {
	entry node.Entry // Key, Value and Data as Prepare made them
	// metric is the series as Collect sends it, built once per write
	// rather than on every scrape; nil for a skipped record.
	metric promclient.Metric
}

// store is the served state: entries by key, and which key serves each
// series. It is a prometheus.Collector emitting one const metric per
// served series.
type store struct {
	s    *Sink
	desc *promclient.Desc
	typ  promclient.ValueType
	mu   sync.RWMutex
	keys map[node.Key]held
	ids  map[string]node.Key // series identity -> the key serving it
}

func newStore(s *Sink) *store {
	typ := promclient.GaugeValue
	if s.fam.typ == "counter" {
		typ = promclient.CounterValue
	}
	return &store{s: s, typ: typ, keys: map[node.Key]held{}, ids: map[string]node.Key{},
		desc: promclient.NewDesc(s.fam.name, s.fam.help, s.fam.labels, nil)}
}

// put holds an entry at k: a served series unless skip. It fails when the
// series is new and max_series are served, or when another key serves it.
func (st *store) put(k node.Key, v cty.Value, sr series, data []byte) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	skip := sr.skip != ""
	old, had := st.keys[k]
	if !skip {
		sid := id(data)
		if other, taken := st.ids[sid]; taken && other != k {
			return fmt.Errorf("another key, %s, serves this series already: labels must tell the records of one sink apart", other)
		}
		replacing := had && old.metric != nil
		if !replacing && len(st.ids) >= st.s.maxSeries {
			return errMaxSeries
		}
	}
	h := held{entry: node.Entry{Key: k, Value: v, Data: data}}
	if !skip {
		m, err := promclient.NewConstMetric(st.desc, st.typ, sr.value, sr.values...)
		if err != nil {
			return fmt.Errorf("series: %w", err) // a label value that is not valid UTF-8
		}
		h.metric = m
	}
	if had && old.metric != nil {
		delete(st.ids, id(old.entry.Data))
	}
	st.keys[k] = h
	if !skip {
		st.ids[id(data)] = k
	}
	return nil
}

func (st *store) remove(k node.Key) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if h, ok := st.keys[k]; ok {
		if h.metric != nil {
			delete(st.ids, id(h.entry.Data))
		}
		delete(st.keys, k)
	}
}

func (st *store) count() int {
	st.mu.RLock()
	defer st.mu.RUnlock()
	return len(st.ids)
}

func (st *store) entries() []node.Entry {
	st.mu.RLock()
	defer st.mu.RUnlock()
	out := make([]node.Entry, 0, len(st.keys))
	for _, h := range st.keys {
		out = append(out, h.entry)
	}
	return out
}

// Describe implements prometheus.Collector: the one family.
func (st *store) Describe(ch chan<- *promclient.Desc) { ch <- st.desc }

// Collect implements prometheus.Collector: one const metric per served
// series, built from the entries held at the time of the scrape.
func (st *store) Collect(ch chan<- promclient.Metric) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	for _, h := range st.keys {
		if h.metric == nil {
			continue
		}
		ch <- h.metric
	}
}

var (
	_ node.Target          = (*Target)(nil)
	_ node.Describer       = (*Target)(nil)
	_ promclient.Collector = (*store)(nil)
)

// Explain implements node.Explainer: whether the key's series is served,
// as a scrape shows it (with its node label), or why not.
func (t *Target) Explain(k node.Key) []string {
	if _, refused := t.refused[k]; refused {
		return []string{fmt.Sprintf("not served: max_series %d reached", t.s.maxSeries)}
	}
	t.store.mu.RLock()
	h, ok := t.store.keys[k]
	t.store.mu.RUnlock()
	switch {
	case !ok:
		return nil
	case h.metric == nil:
		return []string{"not served: the value is not a finite number (counted in pipeline_sink_prometheus_skipped_total)"}
	}
	sr, err := decode(h.entry.Data, len(t.s.labels))
	if err != nil {
		return nil
	}
	return []string{"served as " + t.s.format(sr, t.s.address)}
}

var _ node.Explainer = (*Target)(nil)
