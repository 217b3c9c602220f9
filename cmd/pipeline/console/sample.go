package console

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/pipeline/pipeline/engine"
)

// historyLen is how many samples a node's history keeps: 5 minutes at one
// sample a second, for the small plots of a node's metrics.
const historyLen = 300

// frame is one sample of the running graph, sent to every open page as a
// server-sent event "state" and kept as the latest for new pages.
type frame struct {
	Time time.Time `json:"time"`
	// Graph is the version of the graph the page should draw.
	Graph      uint64 `json:"graph"`
	Generation uint64 `json:"generation"`
	// Reloads counts the reload records; the page refetches /reloads
	// when it changes.
	Reloads    int                  `json:"reloads"`
	LastReload *engine.ReloadStatus `json:"last_reload,omitempty"`
	Ready      bool                 `json:"ready"`
	Nodes      map[string]nodeFrame `json:"nodes"`
}

// nodeFrame is one node's part of a frame.
type nodeFrame struct {
	State    string  `json:"state"` // pending, healthy, degraded, down
	Detail   string  `json:"detail,omitempty"`
	Synced   bool    `json:"synced"`
	Restarts int     `json:"restarts,omitempty"`
	Records  int     `json:"records"`
	In       float64 `json:"in"`  // deltas received per second
	Out      float64 `json:"out"` // deltas published per second
	Queue    int     `json:"queue"`
	Pending  int     `json:"pending,omitempty"` // deletions a grace period holds back
	Braked   int     `json:"braked,omitempty"`  // deletes a sink's deletion brake holds
	Writes   float64 `json:"writes,omitempty"`  // sink entries written per second
	Errors   float64 `json:"errors,omitempty"`  // sink writes failed per second
}

// counters are a node's cumulative counts at one sample, from which the
// next sample computes rates.
type counters struct{ in, out, writes, errors float64 }

// point is one sample of a node's history.
type point struct {
	T       int64 // unix seconds
	Records int
	In, Out float64
	Queue   int
}

// ring keeps the last historyLen points of one node.
type ring struct {
	pts  [historyLen]point
	next int
	n    int
}

func (r *ring) add(p point) {
	r.pts[r.next] = p
	r.next = (r.next + 1) % historyLen
	r.n = min(r.n+1, historyLen)
}

// series returns the points oldest first, as columns.
func (r *ring) series() historyView {
	h := historyView{T: make([]int64, 0, r.n), Records: make([]int, 0, r.n), In: make([]float64, 0, r.n),
		Out: make([]float64, 0, r.n), Queue: make([]int, 0, r.n)}
	for i := 0; i < r.n; i++ {
		p := r.pts[(r.next-r.n+i+historyLen)%historyLen]
		h.T, h.Records, h.In, h.Out, h.Queue = append(h.T, p.T), append(h.Records, p.Records), append(h.In, p.In),
			append(h.Out, p.Out), append(h.Queue, p.Queue)
	}
	return h
}

type historyView struct {
	T       []int64   `json:"t"`
	Records []int     `json:"records"`
	In      []float64 `json:"in"`
	Out     []float64 `json:"out"`
	Queue   []int     `json:"queue"`
}

// gauges are a node's gauges at one sample: its queue depth and the
// deletes its deletion brake holds.
type gauges struct{ queue, braked int }

// gatherCounts reads the engine's per-node metrics from its registry, in
// process (no text exposition is parsed).
func gatherCounts(g prometheus.Gatherer) (map[string]counters, map[string]gauges, error) {
	mfs, err := g.Gather()
	cs, gs := map[string]counters{}, map[string]gauges{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			addr := label(m, "node")
			if addr == "" {
				continue
			}
			c := cs[addr]
			switch mf.GetName() {
			case "pipeline_node_deltas_total":
				if label(m, "direction") == "in" {
					c.in = m.GetCounter().GetValue()
				} else {
					c.out = m.GetCounter().GetValue()
				}
			case "pipeline_sink_writes_total":
				if label(m, "result") == "error" {
					c.errors += m.GetCounter().GetValue()
				} else {
					c.writes += m.GetCounter().GetValue()
				}
			case "pipeline_node_queue_depth":
				g := gs[addr]
				g.queue = int(m.GetGauge().GetValue())
				gs[addr] = g
			case "pipeline_sink_deletes_held":
				g := gs[addr]
				g.braked = int(m.GetGauge().GetValue())
				gs[addr] = g
			}
			cs[addr] = c
		}
	}
	return cs, gs, err
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// rate is the change of a counter per second; a counter that went down (a
// rebuilt node starts again at 0) counts from 0.
func rate(now, before, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	if now < before {
		before = 0
	}
	return (now - before) / secs
}
