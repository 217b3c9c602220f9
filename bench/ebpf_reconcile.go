package bench

import (
	"context"
	"fmt"
)

// ebpfReconcile gives the ebpf_map rows from engine's
// BenchmarkFullReconcile: the sink loop's own full reconcile with the
// ebpf_map target, 100,000 keys into an empty map (E2) and after 1%
// drift (E4), each against the raw work on the same map in the same
// iterations (E1: one BatchUpdate of the pre-encoded keys; E3: a
// BatchLookup of the whole map plus one BatchUpdate and one BatchDelete
// of the drift, already known).
func ebpfReconcile(ctx context.Context, e *Env) ([]Row, error) {
	if why := needRoot(); why != "" {
		return []Row{skipped("E1", "ebpf_map reconcile, 100,000 keys", why)}, nil
	}
	benchtime := "7x" // each metric is the median of the iterations
	if e.opts.Smoke {
		benchtime = "1x"
	}
	m, err := goBench(ctx, "./engine", "^BenchmarkFullReconcile$", benchtime, e.opts.Runs)
	if err != nil {
		return nil, err
	}
	metric := func(id, name, unit string) Row {
		vs, ok := m[unit]
		if !ok {
			return skipped(id, name, "BenchmarkFullReconcile reports no "+unit)
		}
		return measured(id, name, "ms", scaled(vs, 1e6))
	}
	e1 := metric("E1", "floor: raw BatchUpdate of 100,000 keys into an empty map", "floor-ns/op")
	e2 := metric("E2", "ebpf_map full reconcile, 100,000 keys into an empty map", "empty-ns/op")
	e3 := metric("E3", "floor: raw BatchLookup of 100,000 + BatchUpdate/Delete of the 1% drift", "drift-floor-ns/op")
	e4 := metric("E4", "ebpf_map full reconcile after 1% drift of 100,000 keys", "drift1pct-ns/op")
	if e1.Skipped == "" && e2.Skipped == "" {
		e2 = e2.against(e1, "<= 1.25x E1")
		e2.Note = "the sink loop itself, same map and iterations as E1"
	}
	if e3.Skipped == "" && e4.Skipped == "" {
		e4 = e4.against(e3, "<= 2x E3")
		// Between E2 and E4 the sink loop, with nothing left to write,
		// indexes the keys E2 wrote; neither row includes that.
		if vs := m["index-ns/op"]; len(vs) > 0 {
			e4.Note = fmt.Sprintf("after E2 the loop, idle, indexes the keys it wrote in %.1f ms", measured("", "", "ms", scaled(vs, 1e6)).Median)
		}
	}
	return []Row{e1, e2, e3, e4}, nil
}
