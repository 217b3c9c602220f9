package inspect

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/pipeline/pipeline/cmd/pipeline/view"
)

// topMetrics are the families top reads, each by its node label (and the
// label that splits it, joined to the name: "pipeline_node_deltas_total/in").
var topMetrics = map[string]string{
	"pipeline_node_records":                "",
	"pipeline_node_deltas_total":           "direction",
	"pipeline_node_queue_depth":            "",
	"pipeline_node_overflow_resyncs_total": "",
	"pipeline_node_restarts_total":         "",
	"pipeline_sink_writes_total":           "result",
	"pipeline_change_latency_seconds":      "",
}

// parseNodeMetrics reads the Prometheus text exposition into metric -> node -> value;
// a histogram gives name/sum and name/count.
func parseNodeMetrics(body []byte) (map[string]map[string]float64, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]float64{}
	add := func(name, node string, v float64) {
		if out[name] == nil {
			out[name] = map[string]float64{}
		}
		out[name][node] += v
	}
	for name, split := range topMetrics {
		fam := fams[name]
		if fam == nil {
			continue
		}
		for _, m := range fam.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			key := name
			if split != "" {
				key += "/" + labels[split]
			}
			node := labels["node"]
			switch {
			case m.GetHistogram() != nil:
				add(name+"/sum", node, m.GetHistogram().GetSampleSum())
				add(name+"/count", node, float64(m.GetHistogram().GetSampleCount()))
			case m.GetCounter() != nil:
				add(key, node, m.GetCounter().GetValue())
			case m.GetGauge() != nil:
				add(key, node, m.GetGauge().GetValue())
			}
		}
	}
	return out, nil
}

// topRow is one node's line.
type topRow struct {
	node, state                string
	records, queue             float64
	in, out, errs              float64 // per second; -1 before a second sample
	resyncs, restarts, latency float64 // latency: mean seconds over the interval; -1 when none
	sink                       bool
}

func topRows(prev, cur *topSample) []topRow {
	secs := 0.0
	if prev != nil {
		secs = cur.at.Sub(prev.at).Seconds()
	}
	rate := func(name, node string) float64 {
		if secs <= 0 {
			return -1
		}
		return max(cur.metrics[name][node]-prev.metrics[name][node], 0) / secs
	}
	var rows []topRow
	for _, st := range cur.ready.Nodes {
		n := st.Address
		// The instance's answer is printed: its names and states are escaped.
		r := topRow{node: view.Printable(n), state: view.Printable(st.State), sink: strings.HasPrefix(n, "sink."),
			records: cur.metrics["pipeline_node_records"][n], queue: cur.metrics["pipeline_node_queue_depth"][n],
			in: rate("pipeline_node_deltas_total/in", n), out: rate("pipeline_node_deltas_total/out", n),
			errs: rate("pipeline_sink_writes_total/error", n), latency: -1,
			resyncs: cur.metrics["pipeline_node_overflow_resyncs_total"][n], restarts: cur.metrics["pipeline_node_restarts_total"][n]}
		if prev != nil {
			dc := cur.metrics["pipeline_change_latency_seconds/count"][n] - prev.metrics["pipeline_change_latency_seconds/count"][n]
			if dc > 0 {
				r.latency = (cur.metrics["pipeline_change_latency_seconds/sum"][n] - prev.metrics["pipeline_change_latency_seconds/sum"][n]) / dc
			}
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].node < rows[j].node })
	return rows
}

// topView draws frames: in place with colours on a terminal, else as
// plain blocks of lines separated by a blank line.
type topView struct {
	w       io.Writer
	colour  bool
	against string
	frames  int
}

var stateColours = map[string]string{"healthy": "\x1b[32m", "pending": "\x1b[33m", "degraded": "\x1b[33m", "down": "\x1b[31m"}

func (v *topView) render(rows []topRow, s *topSample) error {
	var b bytes.Buffer
	if v.colour {
		b.WriteString("\x1b[H\x1b[2J") // home and clear: redraw in place
	} else if v.frames > 0 {
		b.WriteString("\n")
	}
	v.frames++
	ready := "not ready"
	if s.ready.Ready {
		ready = "ready"
	}
	fmt.Fprintf(&b, "pipeline top  %s  %s  %s\n\n", view.Printable(v.against), ready, s.at.Format(time.TimeOnly))
	// The table is laid out without colour, then the states are painted:
	// tabwriter counts escape codes as width, which shifted every coloured
	// row against the header. Padding 1, short headings (explained in the
	// legend) and compact numbers keep a row of a 30-character address
	// within 80 columns.
	var t bytes.Buffer
	tw := tabwriter.NewWriter(&t, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTATE\tRECS\tIN/s\tOUT/s\tQ\tRS\tRT\tLAT\tERR/s")
	for _, r := range rows {
		latency, errs := "-", "-"
		if r.latency >= 0 {
			latency = shortDuration(r.latency)
		}
		if r.sink {
			errs = perSecond(r.errs) // RECS of a sink: the entries its target holds
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.node, r.state, count(r.records),
			perSecond(r.in), perSecond(r.out), count(r.queue), count(r.resyncs), count(r.restarts), latency, errs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for i, line := range strings.SplitAfter(t.String(), "\n") {
		if i > 0 && i <= len(rows) && v.colour {
			if c := stateColours[rows[i-1].state]; c != "" {
				at := len(rows[i-1].node)
				if j := strings.Index(line[at:], rows[i-1].state); j >= 0 {
					j += at
					line = line[:j] + c + rows[i-1].state + "\x1b[0m" + line[j+len(rows[i-1].state):]
				}
			}
		}
		b.WriteString(line)
	}
	b.WriteString("\nQ queue depth, RS overflow resyncs, RT restarts, LAT mean change latency\n")
	if _, err := v.w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("top: %w", err)
	}
	return nil
}

// perSecond prints a rate in 5 characters or so: 3.4, 812, 12.3k.
func perSecond(r float64) string {
	switch {
	case r < 0:
		return "-"
	case r < 10:
		return fmt.Sprintf("%.1f", r)
	}
	return compact(r, 10_000)
}

// count prints a count in at most 6 characters: 812, 99999, 123.4k, 12.3M.
func count(n float64) string { return compact(n, 100_000) }

// compact prints n whole below limit, else in thousands or millions.
func compact(n, limit float64) string {
	switch {
	case n < limit:
		return fmt.Sprintf("%.0f", n)
	case n < 1e6:
		return fmt.Sprintf("%.1fk", n/1e3)
	}
	return fmt.Sprintf("%.1fM", n/1e6)
}

// shortDuration prints seconds with 3 significant digits: 512µs, 12.3ms, 1.23s.
func shortDuration(sec float64) string {
	switch {
	case sec < 1e-3:
		return fmt.Sprintf("%.0fµs", sec*1e6)
	case sec < 0.01:
		return fmt.Sprintf("%.2fms", sec*1e3)
	case sec < 0.1:
		return fmt.Sprintf("%.1fms", sec*1e3)
	case sec < 1:
		return fmt.Sprintf("%.0fms", sec*1e3)
	}
	return fmt.Sprintf("%.2fs", sec)
}
