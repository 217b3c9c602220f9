// Package sinks is the room of the sink types, one package each: ebpfmap
// (pinned kernel BPF maps), log (one line per delta), and audit, nats and
// natskv (schemas registered; runtimes to come). A sink only opens a Target;
// the engine owns the reconcile loop (batching, retries, prune, resync).
package sinks
