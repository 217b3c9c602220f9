// Package natsconn is the NATS connection shared by every NATS node (sink
// "nats", sink "nats_kv", source "nats_kv"): the connection attributes and
// the embedded-server block declared once, their decoding, and a Conn that
// reports Connected / Reconnecting / Closed and re-dials a connection the
// client library gave up on, so no node is left holding a dead connection
// while its health says OK. It also runs an embedded nats-server for a node
// that declares one. What the nodes do with the connection (KV mirror, watch,
// publish) lives in their own folders. It imports schema and nothing else of
// ours; it reports through a callback, not node.Health, so that it stays
// below the node contract.
package natsconn
