package bench

import "context"

// aggregateJoin gives G1: transform aggregate joining 3,000 routes with
// the 3,000 Services they name (6,000 input records), as
// examples/gateway-api's join does, from transforms/aggregate's
// BenchmarkJoinChange and BenchmarkJoin: the CPU time (every thread of the
// process, the collector's included) of the evaluation after one route
// changes (G1, the goal), after one Service changes (G1b), and of a first
// evaluation (G1c).
func aggregateJoin(ctx context.Context, e *Env) ([]Row, error) {
	benchtime := "20x"
	if e.opts.Smoke {
		benchtime = "2x"
	}
	var cpu [3][]float64
	for i, pattern := range []string{"^BenchmarkJoinChange$/^route$/^3000$", "^BenchmarkJoinChange$/^service$/^3000$", "^BenchmarkJoin$/^3000$"} {
		m, err := goBench(ctx, "./transforms/aggregate", pattern, benchtime, e.opts.Runs)
		if err != nil {
			return nil, err
		}
		cpu[i] = m["cpu-ns/op"]
	}
	r := measured("G1", "transform aggregate, join at 3,000 routes: one route changes, CPU per evaluation", "ms", scaled(cpu[0], 1e6))
	r.Goal = "<= 30"
	r.Note = "only the changed route's for_each element and the for expressions it passes are evaluated again"
	b := measured("G1b", "transform aggregate, join at 3,000 routes: one Service changes, CPU per evaluation", "ms", scaled(cpu[1], 1e6))
	b.Note = "every route's record reads let.ports, which changed: all 3,000 elements are evaluated again"
	c := measured("G1c", "transform aggregate, join at 3,000 routes: first evaluation, CPU", "ms", scaled(cpu[2], 1e6))
	c.Note = "what every change cost before evaluations were incremental"
	return []Row{r, b, c}, nil
}
