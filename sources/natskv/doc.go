// Package natskv declares source "nats_kv": the records of a NATS JetStream
// key-value bucket, watched (the agent side of the hub/agent pattern: one
// hub writes kubernetes -> nats_kv, every node reads nats_kv -> ebpf_map).
// Its schema is complete so configurations validate; its runtime is not
// written yet, so `pipeline run` refuses it (Status Planned).
package natskv
