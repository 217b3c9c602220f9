package prometheus

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

const benchSeries = 100_000

const benchBody = `
input      = source.kubernetes.widgets
metric     = "kube_customresource_ready"
help       = "Whether the object's Ready condition is True."
labels     = { namespace = record.value.namespace, name = record.value.name, condition = "Ready" }
value      = record.value.ready
max_series = 100000
`

// scrapeOnce serves one scrape of reg in the text format, as the admin
// endpoint does, and returns its size.
func scrapeOnce(b *testing.B, h http.Handler) int {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		b.Fatalf("scrape: %d %s", rec.Code, rec.Body.String())
	}
	return rec.Body.Len()
}

// BenchmarkScrape100k times one scrape of 100,000 series served by the
// sink's target against the floor: client_golang's own registry holding
// the same series in a GaugeVec (with the same node label), scraped in
// turn in one process. It reports each one's time per scrape (floor-ms,
// sink-ms) and the bytes of each exposition, which must be equal.
func BenchmarkScrape100k(b *testing.B) {
	s := nodetest.MustBuild(b, Spec(), benchBody, nil).Sink.(*Sink)
	sinkReg, floorReg := promclient.NewRegistry(), promclient.NewRegistry()
	env, _ := nodetest.Env(b, nil)
	env.Metrics = promclient.WrapRegistererWith(promclient.Labels{"node": s.address}, sinkReg)
	tg, err := s.Open(context.Background(), env, node.ModeRun)
	if err != nil {
		b.Fatal(err)
	}
	defer tg.Close()
	gv := promclient.NewGaugeVec(promclient.GaugeOpts{Name: s.fam.name, Help: s.fam.help}, []string{"condition", "name", "namespace"})
	promclient.WrapRegistererWith(promclient.Labels{"node": s.address}, floorReg).MustRegister(gv)
	batch := make([]node.Entry, 0, benchSeries)
	for i := range benchSeries {
		ns, name, ready := fmt.Sprintf("ns-%d", i%100), fmt.Sprintf("widget-%d", i), i%3 != 0
		e, err := tg.Prepare(node.Record{Key: ns + "/" + name, Value: cty.ObjectVal(map[string]cty.Value{
			"namespace": cty.StringVal(ns), "name": cty.StringVal(name), "ready": cty.BoolVal(ready)})})
		if err != nil {
			b.Fatal(err)
		}
		batch = append(batch, e)
		v := 0.0
		if ready {
			v = 1
		}
		gv.WithLabelValues("Ready", name, ns).Set(v)
	}
	tg.Update(context.Background(), batch)
	for _, e := range batch {
		if e.Err != nil {
			b.Fatal(e.Err)
		}
	}
	sinkH := promhttp.HandlerFor(sinkReg, promhttp.HandlerOpts{})
	floorH := promhttp.HandlerFor(floorReg, promhttp.HandlerOpts{})
	var floor, sink time.Duration
	var floorBytes, sinkBytes int
	for b.Loop() {
		start := time.Now()
		floorBytes = scrapeOnce(b, floorH)
		floor += time.Since(start)
		start = time.Now()
		sinkBytes = scrapeOnce(b, sinkH)
		sink += time.Since(start)
	}
	n := float64(b.N) * 1e6
	b.ReportMetric(float64(floor)/n, "floor-ms")
	b.ReportMetric(float64(sink)/n, "sink-ms")
	b.ReportMetric(float64(floorBytes), "floor-bytes")
	b.ReportMetric(float64(sinkBytes), "sink-bytes")
}
