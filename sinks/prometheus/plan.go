package prometheus

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
)

// noInstance is plan's note when no running instance is given: the
// series served live in a process plan cannot read.
const noInstance = "series of the running instance unknown (give its admin address with plan --against ADDR): every series shown as an add"

// scrapeTimeout bounds plan's read of the running instance's /metrics.
const scrapeTimeout = 30 * time.Second

// maxScrape bounds the exposition plan reads.
const maxScrape = 1 << 30

// planState is what a target opened with ModePlan needs to read the
// series a running instance serves: where they are served, and the
// entries Prepare made, whose labels map a served series back to the key
// that wants it (a scrape shows labels, not keys).
type planState struct {
	running  node.Running
	given    bool
	mu       sync.Mutex
	prepared map[node.Key]node.Entry
	byID     map[string]node.Key // series identity -> the least key preparing it
}

// note is what plan shows under the target's heading.
func (p *planState) note() string {
	if p.given {
		return ""
	}
	return noInstance
}

// remember records an entry Prepare made.
func (p *planState) remember(e node.Entry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prepared[e.Key] = e
	sid := id(e.Data)
	if k, ok := p.byID[sid]; !ok || e.Key < k {
		p.byID[sid] = e.Key
	}
}

// actual is what the running instance serves for this sink, as entries:
// a served series whose labels a prepared record computes is that
// record's key's entry; any other series of the sink (node label equal to
// its address) is an entry whose key is the series as the exposition
// names it, family and labels without node, and which plan shows as
// removed. A record whose value is skipped serves no series, so a
// scrape cannot tell whether the instance holds it: when the instance
// serves no series with its labels, it is taken as held as it is (what
// is served is the same either way).
func (t *Target) actualServed(ctx context.Context) ([]node.Entry, error) {
	p := t.plan
	if !p.given {
		return nil, nil
	}
	mfs, err := readMetrics(ctx, p.running.MetricsURL)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []node.Entry
	matched := map[node.Key]bool{}
	for _, name := range slices.Sorted(maps.Keys(mfs)) {
		mf := mfs[name]
		if reserved(name) {
			continue
		}
		for _, m := range mf.GetMetric() {
			names, values, ok := t.labelsOf(m)
			if !ok {
				continue
			}
			sr := series{values: values, value: metricValue(mf, m)}
			if name == t.s.fam.name && slices.Equal(names, t.s.fam.labels) {
				data := encode(sr)
				if k, ok := p.byID[id(data)]; ok && !matched[k] {
					matched[k] = true
					out = append(out, t.s.entry(k, sr))
					continue
				}
				line := t.s.format(sr, "")
				out = append(out, node.Entry{Key: strings.TrimSuffix(line, " "+formatValue(sr.value)), Value: cty.StringVal(line), Data: data})
				continue
			}
			line := foreignLine(name, names, values, sr.value)
			out = append(out, node.Entry{Key: strings.TrimSuffix(line, " "+formatValue(sr.value)), Value: cty.StringVal(line)})
		}
	}
	for k, e := range p.prepared {
		if e.Data[0] == 1 && !matched[k] {
			out = append(out, e)
		}
	}
	return out, nil
}

// labelsOf returns m's label names and values without node, when m is a
// series of this sink (node is its address).
func (t *Target) labelsOf(m *dto.Metric) (names, values []string, ok bool) {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == "node" {
			ok = lp.GetValue() == t.s.address
			continue
		}
		names = append(names, lp.GetName())
		values = append(values, lp.GetValue())
	}
	return names, values, ok
}

// reserved reports whether name is one of this program's own families,
// which carry the node label too but are no series of a sink.
func reserved(name string) bool {
	return slices.ContainsFunc(reservedPrefixes, func(p string) bool { return strings.HasPrefix(name, p) })
}

func metricValue(mf *dto.MetricFamily, m *dto.Metric) float64 {
	switch mf.GetType() {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	case dto.MetricType_UNTYPED:
		return m.GetUntyped().GetValue()
	}
	return math.NaN()
}

// foreignLine writes a served series of the sink's node that is not of
// its family and label names now (the family was renamed, a label
// added): it goes once the sink serves the new ones.
func foreignLine(name string, names, values []string, v float64) string {
	var b strings.Builder
	b.WriteString(name)
	if len(names) > 0 {
		b.WriteByte('{')
		for i := range names {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `%s="%s"`, names[i], escapeLabel(values[i]))
		}
		b.WriteByte('}')
	}
	return b.String() + " " + formatValue(v)
}

// readMetrics reads the families the instance serves on /metrics.
func readMetrics(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("read the served series: %w", err)
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read the served series: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("read the served series: GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(b)))
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(io.LimitReader(resp.Body, maxScrape))
	if err != nil {
		return nil, fmt.Errorf("read the served series: GET %s: %w", url, err)
	}
	return mfs, nil
}
