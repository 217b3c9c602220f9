// Package sinks is the room of the sink types, one package each: ebpfmap
// (pinned kernel BPF maps), natskv (a NATS key-value bucket), nats (messages
// on NATS subjects), audit (an append-only, tamper-evident trail) and log
// (one line per delta). A sink only opens a Target; the engine owns the
// reconcile loop (batching, retries, prune, resync). Sources are under
// sources/ and transforms under transforms/.
package sinks
