package bench

import "context"

// aggregateJoin gives G1: one evaluation of transform aggregate joining
// 3,000 routes with the 3,000 Services they name (6,000 input records),
// as examples/gateway-api's join does on every change of its input
// (transforms/aggregate's BenchmarkJoin/3000).
func aggregateJoin(ctx context.Context, e *Env) ([]Row, error) {
	benchtime := "10x"
	if e.opts.Smoke {
		benchtime = "1x"
	}
	m, err := goBench(ctx, "./transforms/aggregate", "^BenchmarkJoin$/^3000$", benchtime, e.opts.Runs)
	if err != nil {
		return nil, err
	}
	r := measured("G1", "transform aggregate: join of 3,000 routes with 3,000 Services, one evaluation", "ms", scaled(m["ns/op"], 1e6))
	r.Note = "what every change of the join's input costs: the whole input is evaluated again"
	return []Row{r}, nil
}
