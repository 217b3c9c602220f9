package bench

import (
	"context"
	"fmt"
	"os"
	"time"
)

// startUp gives P0: how long the pipeline binary takes from the fork to
// its exit when it does nothing (`pipeline version`: package init, runtime
// start), against the floor program's own start (`floor -version`). It is
// what every other P row pays before its first byte to the API server.
// Each run times both programs interleaved, 20 times each, and keeps the
// median of those.
func startUp(ctx context.Context, e *Env) ([]Row, error) {
	if _, err := os.Stat(e.opts.Pipeline); err != nil {
		return nil, fmt.Errorf("pipeline binary: %w (run make build)", err)
	}
	const each = 20
	var floor, pipe []float64
	for range e.opts.Runs {
		var f, p []time.Duration
		for range each {
			d, err := e.timeProc(ctx, "floor", e.contender("floor"), "-version")
			if err != nil {
				return nil, err
			}
			f = append(f, d)
			if d, err = e.timeProc(ctx, "pipeline", e.opts.Pipeline, "version"); err != nil {
				return nil, err
			}
			p = append(p, d)
		}
		floor = append(floor, measured("", "", "", millis(f)).Median)
		pipe = append(pipe, measured("", "", "", millis(p)).Median)
	}
	fl := measured("P0a", "start-up: the floor program (floor -version)", "ms", floor)
	fl.Note = "fork to exit, median of 20 per run"
	pl := measured("P0", "start-up: pipeline version", "ms", pipe).against(fl, "<= P0a + 10 ms")
	pl.Note = fmt.Sprintf("%+.1f ms over the floor program", pl.Median-fl.Median)
	return []Row{fl, pl}, nil
}
