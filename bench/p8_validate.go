package bench

import (
	"context"
	"fmt"
)

// validate measures P8 with cmd/pipeline's BenchmarkValidate1000 (parse,
// variables, locals, every node body and the graph of 1,000 generated
// blocks, with the GC setting of the validate command), against its goal.
func validate(ctx context.Context, e *Env) ([]Row, error) {
	benchtime := "5x"
	if e.opts.Smoke {
		benchtime = "1x"
	}
	m, err := goBench(ctx, "./cmd/pipeline", "^BenchmarkValidate1000$/^cli$", benchtime, e.opts.Runs)
	if err != nil {
		return nil, err
	}
	goal := measured("100 ms", "", "", []float64{100})
	row := measured("P8", "validate 1,000 blocks", "ms", scaled(m["ns/op"], 1e6)).against(goal, "<= 100 ms")
	row.Note = fmt.Sprintf("in process, BenchmarkValidate1000/cli, %s per sample", benchtime)
	return []Row{row}, nil
}
