package bench

import (
	"context"
	"fmt"
)

// ebpfReconcile gives the ebpf_map rows from engine/sinkloop's
// BenchmarkFullReconcile: the sink loop's own full reconcile with the
// ebpf_map target, 100,000 keys into an empty map (E2), and resyncs
// after 1% drift: as every resync but the first after start-up meets it
// (E4) and the first (E5), each against the raw work on the same map in
// the same iterations (E1: one BatchUpdate of the pre-encoded keys; E3:
// a BatchLookup of the whole map plus one BatchUpdate and one
// BatchDelete of the drift, already known).
func ebpfReconcile(ctx context.Context, e *Env) ([]Row, error) {
	if why := needRoot(); why != "" {
		return []Row{skipped("E1", "ebpf_map reconcile, 100,000 keys", why)}, nil
	}
	benchtime := "7x" // each metric is the median of the iterations
	if e.opts.Smoke {
		benchtime = "1x"
	}
	m, err := goBench(ctx, "./engine/sinkloop", "^BenchmarkFullReconcile$", benchtime, e.opts.Runs)
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
	e4 := metric("E4", "ebpf_map resync after 1% drift of 100,000 keys", "drift1pct-ns/op")
	e5 := metric("E5", "ebpf_map first resync after start-up, 1% drift of 100,000 keys", "drift1pct-first-ns/op")
	if e1.Skipped == "" && e2.Skipped == "" {
		e2 = e2.against(e1, "<= 1.25x E1")
		e2.Note = "the sink loop itself, same map and iterations as E1"
	}
	// Between the parts the sink loop, with nothing left to write, does
	// its idle work (indexing what it wrote, laying its index out in the
	// order of the last read); no row includes it, the notes give it.
	idle := func(unit string) float64 { return measured("", "", "ms", scaled(m[unit], 1e6)).Median }
	if e3.Skipped == "" && e4.Skipped == "" {
		e4 = e4.against(e3, "<= 2x E3")
		if len(m["settle-ns/op"]) > 0 {
			e4.Note = fmt.Sprintf("as every resync after the first meets it: after E5 the loop, idle, laid its index out in the order of the read in %.1f ms", idle("settle-ns/op"))
		}
	}
	if e3.Skipped == "" && e5.Skipped == "" {
		e5 = e5.against(e3, "<= 2x E3")
		if len(m["index-ns/op"]) > 0 {
			e5.Note = fmt.Sprintf("its index in no read's order yet: after E2 the loop, idle, indexed the keys it wrote in %.1f ms", idle("index-ns/op"))
		}
	}
	return []Row{e1, e2, e3, e4, e5}, nil
}
