// Package nats implements sink "nats": one message per delta published to a
// subject derived from the record, over core NATS (fire and forget, flushed
// per batch) or JetStream (acknowledged, de-duplicated by message id). It
// is append-only: it cannot read back what it sent, so plan lists what it
// would publish and the engine never prunes it. The key-value mirror is
// sinks/natskv; the connection is internal/natsconn.
package nats
