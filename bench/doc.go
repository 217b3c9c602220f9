// Package bench holds benchmarks that run whole graphs through the engine
// with real node types (no cluster, no root): the throughput of the
// extract -> debounce -> grace_period chain into a discarding sink. Sink
// and source benchmarks against their physical floors live beside their
// types (sinks/ebpfmap, sources/kubernetes). No non-test code.
package bench
