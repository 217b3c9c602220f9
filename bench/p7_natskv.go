package bench

import "context"

// natsKVMirror gives P7: the nats_kv sink's target writing 10,000 keys into
// a fresh file-backed bucket on an embedded nats-server, against raw async
// KV publishes of the same keys and values (sinks/natskv's Go benchmarks,
// each in its own process).
func natsKVMirror(ctx context.Context, e *Env) ([]Row, error) {
	benchtime := "3x"
	if e.opts.Smoke {
		benchtime = "1x"
	}
	raw, err := goBench(ctx, "./sinks/natskv", "^BenchmarkRawAsyncPuts10k$", benchtime, e.opts.Runs)
	if err != nil {
		return nil, err
	}
	mirror, err := goBench(ctx, "./sinks/natskv", "^BenchmarkMirror10k$", benchtime, e.opts.Runs)
	if err != nil {
		return nil, err
	}
	floor := measured("P7a", "floor: raw async KV puts of 10,000 keys", "ms", scaled(raw["ns/op"], 1e6))
	m := measured("P7b", "NATS KV mirror of 10,000 keys (nats_kv target)", "ms", scaled(mirror["ns/op"], 1e6)).against(floor, "")
	m.Note = "embedded nats-server, file storage"
	return []Row{floor, m}, nil
}
