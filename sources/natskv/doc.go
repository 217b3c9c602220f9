// Package natskv implements source "nats_kv": the records of a NATS
// JetStream key-value bucket (all keys, or those under key_prefix), watched.
// It is the agent side of the hub/agent pattern: one hub writes
// kubernetes -> nats_kv, every node reads nats_kv -> ebpf_map. The writer is
// sinks/natskv; the connection, key escaping and value encoding are shared
// in internal/natsconn.
package natskv
