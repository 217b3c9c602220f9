package bench

import (
	"context"
	"fmt"
)

// audit gives the audit trail's rows: append throughput and p99 latency
// per fsync mode, and verify throughput on a 1,000,000-line trail (full
// size only: writing it takes about a minute), all from sinks/audit's Go
// benchmarks.
func audit(ctx context.Context, e *Env) ([]Row, error) {
	var rows []Row
	benchtime := "20000x"
	if e.opts.Smoke {
		benchtime = "200x"
	}
	for i, mode := range []string{"always", "interval", "never"} {
		bt := benchtime
		if mode == "always" && !e.opts.Smoke {
			bt = "500x" // one fsync per line
		}
		m, err := goBench(ctx, "./sinks/audit", "^BenchmarkAppend$/^fsync="+mode+"$", bt, e.opts.Runs)
		if err != nil {
			return nil, err
		}
		r := measured(fmt.Sprintf("A%d", i+1), "audit append, fsync = "+mode, "lines/s", m["lines/s"])
		if p99 := m["p99-ns"]; len(p99) > 0 {
			r.Note = fmt.Sprintf("p99 append latency %s us (median of runs)", num(measured("", "", "", p99).Median/1e3))
		}
		rows = append(rows, r)
	}
	if e.opts.Smoke {
		return append(rows, skipped("A4", "audit verify, 1,000,000-line trail", "full size only")), nil
	}
	m, err := goBench(ctx, "./sinks/audit", "^BenchmarkVerify1M$", "1x", e.opts.Runs)
	if err != nil {
		return nil, err
	}
	return append(rows, measured("A4", "audit verify, 1,000,000-line trail", "lines/s", m["lines/s"])), nil
}
