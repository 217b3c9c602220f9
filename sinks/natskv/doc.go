// Package natskv implements sink "nats_kv": the sink's desired state mirrored
// into a NATS JetStream key-value bucket, one key per record under an
// optional prefix that bounds what prune may delete. Values are the records'
// JSON (internal/natsconn encodes them); keys are escaped reversibly where
// KV forbids a character. The engine owns the reconcile loop; this package
// is only the Target. The matching reader is sources/natskv; the connection
// and the embedded server are internal/natsconn.
package natskv
