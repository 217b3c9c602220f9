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
	big, err := validateBig(ctx, e)
	if err != nil {
		return nil, err
	}
	return []Row{row, big}, nil
}

// validateBig measures P8 at 10,000 blocks (BenchmarkValidate10000):
// loading is linear in the blocks, so the goal is ten times 1,000's.
func validateBig(ctx context.Context, e *Env) (Row, error) {
	benchtime := "3x"
	if e.opts.Smoke {
		benchtime = "1x"
	}
	m, err := goBench(ctx, "./cmd/pipeline", "^BenchmarkValidate10000$", benchtime, e.opts.Runs)
	if err != nil {
		return Row{}, err
	}
	goal := measured("1 s", "", "", []float64{1000})
	row := measured("P8b", "validate 10,000 blocks", "ms", scaled(m["ns/op"], 1e6)).against(goal, "<= 1 s (linear)")
	row.Note = fmt.Sprintf("in process, BenchmarkValidate10000, %s per sample", benchtime)
	return row, nil
}
