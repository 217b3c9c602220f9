package bench

import (
	"context"
	"fmt"
)

// lspRows measures the language server beside P8 with cmd/pipeline's
// BenchmarkLSP1000 (the same 1,000 generated blocks, driven over a pipe
// as an editor does): an edit until its diagnostics are published, and a
// completion inside a sink block until its answer (P8d with the file
// parsed, P8e right after an edit), against their goals.
func lspRows(ctx context.Context, e *Env) ([]Row, error) {
	benchtime := "10x"
	if e.opts.Smoke {
		benchtime = "1x"
	}
	var rows []Row
	for _, r := range []struct {
		id, name, sub string
		goal          float64
	}{
		{"P8c", "lsp diagnostics after an edit, 1,000 blocks", "diagnostics", 100},
		{"P8d", "lsp completion, 1,000 blocks", "completion", 20},
		{"P8e", "lsp completion right after an edit, 1,000 blocks", "completion-after-edit", 20},
	} {
		m, err := goBench(ctx, "./cmd/pipeline", "^BenchmarkLSP1000$/^"+r.sub+"$", benchtime, e.opts.Runs)
		if err != nil {
			return rows, err
		}
		goal := measured(fmt.Sprintf("%g ms", r.goal), "", "", []float64{r.goal})
		row := measured(r.id, r.name, "ms", scaled(m["ns/op"], 1e6)).against(goal, fmt.Sprintf("<= %g ms", r.goal))
		row.Note = fmt.Sprintf("in process over a pipe, BenchmarkLSP1000/%s, %s per sample", r.sub, benchtime)
		rows = append(rows, row)
	}
	return rows, nil
}
