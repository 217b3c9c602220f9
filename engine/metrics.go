package engine

import (
	"maps"
	"runtime"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metrics are the engine's own metrics, one set for every node, labelled by
// node address. Node types register their own metrics through node.Env.
type Metrics struct {
	records       *prometheus.GaugeVec
	deltas        *prometheus.CounterVec
	queueDepth    *prometheus.GaugeVec
	overflows     *prometheus.CounterVec
	restarts      *prometheus.CounterVec
	writes        *prometheus.CounterVec
	reconcile     *prometheus.HistogramVec
	latency       *prometheus.HistogramVec
	skipped       *prometheus.CounterVec
	drift         *prometheus.CounterVec
	deletesBraked *prometheus.GaugeVec
	generation    prometheus.Gauge
	reloads       *prometheus.CounterVec
	reloadOK      prometheus.Gauge
	nodeGatherer  *nodeGatherers
}

// NewMetrics registers the engine metrics on reg and returns them.
// version is reported by pipeline_build_info.
func NewMetrics(reg prometheus.Registerer, version string) *Metrics {
	m := &Metrics{
		records: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pipeline_node_records",
			Help: "Records in the node's output collection; for a sink, the entries its target holds as far as the sink knows."}, []string{"node"}),
		deltas: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pipeline_node_deltas_total",
			Help: "Deltas received (direction=in) and published (direction=out) by the node."}, []string{"node", "direction"}),
		queueDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pipeline_node_queue_depth",
			Help: "Deltas waiting in the node's input queue."}, []string{"node"}),
		overflows: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pipeline_node_overflow_resyncs_total",
			Help: "Times the node's input queue overflowed and the node was resynchronised from a snapshot (nothing is dropped)."}, []string{"node"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pipeline_node_restarts_total",
			Help: "Times the node failed and was restarted with backoff."}, []string{"node"}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pipeline_sink_writes_total",
			Help: "Entries written to the sink's target by operation and result."}, []string{"node", "op", "result"}),
		reconcile: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "pipeline_sink_reconcile_duration_seconds",
			Help: "Duration of full reconciles (read target, diff, apply).", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"node"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "pipeline_change_latency_seconds",
			Help: "Time from a change's receipt at its source to its application by the sink.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18)}, []string{"node"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pipeline_sink_skipped_records_total",
			Help: "Records the sink's target could not encode; they are skipped, never written half."}, []string{"node"}),
		drift: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pipeline_sink_drift_repaired_total",
			Help: "Entries found wrong or missing in the target at a full reconcile and repaired."}, []string{"node"}),
		deletesBraked: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pipeline_sink_deletes_held",
			Help: "Deletes the deletion brake holds (max_deletes): more were pending at once than it allows; they are applied when the input wants keys back or max_deletes is raised."}, []string{"node"}),
		generation: prometheus.NewGauge(prometheus.GaugeOpts{Name: "pipeline_config_generation",
			Help: "Generation of the running configuration; the configuration loaded at start is generation 1."}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pipeline_config_reloads_total",
			Help: "Configuration reloads by result: applied, rejected (invalid; nothing changed) or rolled_back (a new part failed to start; the old graph kept running)."}, []string{"result"}),
		reloadOK: prometheus.NewGauge(prometheus.GaugeOpts{Name: "pipeline_config_last_reload_successful",
			Help: "1 when the last reload was applied (or none was tried), 0 when it was rejected or rolled back."}),
		nodeGatherer: &nodeGatherers{regs: map[string]*prometheus.Registry{}},
	}
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pipeline_build_info",
		Help: "Build information; the value is always 1."}, []string{"version", "goversion"})
	info.WithLabelValues(version, runtime.Version()).Set(1)
	for _, result := range []ReloadResult{ReloadApplied, ReloadRejected, ReloadRolledBack} {
		m.reloads.WithLabelValues(string(result)) // exported at 0 from the start
	}
	m.reloadOK.Set(1)
	reg.MustRegister(m.records, m.deltas, m.queueDepth, m.overflows, m.restarts, m.writes, m.reconcile,
		m.latency, m.skipped, m.drift, m.deletesBraked, m.generation, m.reloads, m.reloadOK, info)
	return m
}

// NodeGatherer gathers the metrics that running nodes registered through
// node.Env. Serve it together with the engine's registry.
func (m *Metrics) NodeGatherer() prometheus.Gatherer { return m.nodeGatherer }

// nodeRegistry returns a fresh registry for a node run, replacing the previous one.
func (m *Metrics) nodeRegistry(addr string) prometheus.Registerer {
	reg := prometheus.NewRegistry()
	m.nodeGatherer.set(addr, reg)
	return prometheus.WrapRegistererWith(prometheus.Labels{"node": addr}, reg)
}

type nodeGatherers struct {
	mu   sync.Mutex
	regs map[string]*prometheus.Registry
}

func (g *nodeGatherers) set(addr string, reg *prometheus.Registry) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if reg == nil {
		delete(g.regs, addr)
		return
	}
	g.regs[addr] = reg
}

func (g *nodeGatherers) Gather() ([]*dto.MetricFamily, error) {
	g.mu.Lock()
	gs := make(prometheus.Gatherers, 0, len(g.regs))
	for _, a := range slices.Sorted(maps.Keys(g.regs)) {
		gs = append(gs, g.regs[a])
	}
	g.mu.Unlock()
	return gs.Gather()
}

// nodeStats are the metric children of one node; a nil *nodeStats does
// nothing. statsFor creates every child, so each node's metrics exist at 0
// from the start rather than appearing at their first change.
type nodeStats struct {
	records    prometheus.Gauge
	deltasIn   prometheus.Counter
	deltasOut  prometheus.Counter
	queueDepth prometheus.Gauge
	overflows  prometheus.Counter
	restarts   prometheus.Counter
}

func (m *Metrics) statsFor(addr string) *nodeStats {
	if m == nil {
		return nil
	}
	return &nodeStats{
		records:    m.records.WithLabelValues(addr),
		deltasIn:   m.deltas.WithLabelValues(addr, "in"),
		deltasOut:  m.deltas.WithLabelValues(addr, "out"),
		queueDepth: m.queueDepth.WithLabelValues(addr),
		overflows:  m.overflows.WithLabelValues(addr),
		restarts:   m.restarts.WithLabelValues(addr),
	}
}

func (s *nodeStats) out(n, size int) {
	if s == nil {
		return
	}
	s.deltasOut.Add(float64(n))
	s.records.Set(float64(size))
}

func (s *nodeStats) in(n int) {
	if s != nil {
		s.deltasIn.Add(float64(n))
	}
}

func (s *nodeStats) queue(depth int) {
	if s != nil {
		s.queueDepth.Set(float64(depth))
	}
}

func (s *nodeStats) overflow() {
	if s != nil {
		s.overflows.Inc()
	}
}

// SetGeneration sets pipeline_config_generation.
func (m *Metrics) SetGeneration(g uint64) { m.generation.Set(float64(g)) }

// discardRegisterer accepts and forgets collectors (runs without metrics).
type discardRegisterer struct{}

func (discardRegisterer) Register(prometheus.Collector) error  { return nil }
func (discardRegisterer) MustRegister(...prometheus.Collector) {}
func (discardRegisterer) Unregister(prometheus.Collector) bool { return true }
