// Package natskv declares sink "nats_kv": the sink's desired state mirrored
// into a NATS JetStream key-value bucket (one key per record, under an
// optional prefix that bounds what prune may delete). The matching source
// is sources/natskv. Its schema is complete so configurations validate; its
// runtime is not written yet, so `pipeline run` refuses it (Status Planned).
package natskv
