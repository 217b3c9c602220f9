// Package transforms is the room of the transform types, one package each:
//
//   - extract: objects -> records through HCL expressions (where, for_each,
//     key, value, jsonpath()), with shared keys reference-counted;
//   - filter: keeps the records for which an expression holds;
//   - debounce: coalesces bursts per key, flushed after a quiet interval or
//     max_wait at the latest;
//   - graceperiod ("grace_period"): holds deletions for a delay, a re-add
//     cancels them; one heap and one timer for any number of them.
//
// A transform consumes one collection (node.Input) and publishes another
// (node.Output) from Run, on one goroutine that owns its state. It never
// imports another node package or the engine; the engine wires transforms
// together and cmd/pipeline lists their Specs. Debounce and grace_period read
// time through node.Env (env.Now, env.NewTimer: the wall clock when running,
// a virtual one under `pipeline test`) and are tested under testing/synctest.
//
// This package itself holds no code: its tests chain the transforms through
// a small channel adapter standing in for the engine's collections, for a
// model test (random histories converge to what the input implies) and
// BenchmarkChain (object updates per second through extract -> debounce ->
// grace_period).
package transforms
