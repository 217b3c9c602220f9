// Package nats declares sink "nats": every change published to a NATS
// subject derived from the record, with core NATS or JetStream
// acknowledgements. The key-value mirror is sink "nats_kv". Its schema is
// complete so configurations validate; its runtime is not written yet, so
// `pipeline run` refuses it (Status Planned).
package nats
