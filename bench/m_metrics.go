package bench

import "context"

// metricsScrape gives M1: one scrape of 100,000 series served by the
// prometheus sink's target (the text exposition, through promhttp as the
// admin endpoint serves it) against client_golang's own registry holding
// the same series in a GaugeVec, scraped in turn in one process
// (sinks/prometheus's BenchmarkScrape100k). Both are in-process scrapes:
// the row compares what one scrape costs, not a network round trip.
func metricsScrape(ctx context.Context, e *Env) ([]Row, error) {
	benchtime := "10x"
	if e.opts.Smoke {
		benchtime = "1x"
	}
	m, err := goBench(ctx, "./sinks/prometheus", "^BenchmarkScrape100k$", benchtime, e.opts.Runs)
	if err != nil {
		return nil, err
	}
	floor := measured("M1a", "floor: client_golang GaugeVec, scrape of 100,000 series", "ms", m["floor-ms"])
	sink := measured("M1b", "prometheus sink: scrape of the same 100,000 series", "ms", m["sink-ms"]).against(floor, "<= 1.5x")
	sink.Note = "same series and node label, scraped in turn in one process; the sink's scrape also holds its 3 own metrics"
	return []Row{floor, sink}, nil
}
