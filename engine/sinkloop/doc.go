// Package sinkloop is the reconcile loop of one sink: it keeps the desired
// state from the sink's input in target terms (node.Target.Prepare),
// batches what arrives together, writes it (Update, Delete), retries failed
// entries with per-key backoff, runs full reconciles (read the target,
// compare, write the difference) at start, when the input syncs and every
// resync, and never deletes before the input is synced.
//
// A Loop lives as long as its sink node; each Run builds its state afresh
// (state, loop.go), so nothing is reset by hand. One batch goes from the
// dirty list (loop.go: handle, incremental, decide) through apply.go
// (batch, apply, outcome) to the target and on to held.go (what the
// target now holds, and its index by bytes: heldindex). full.go is the
// full reconcile, keys.go each key's state and its hold, collide.go the
// input keys that map to one target key.
//
// It is not the engine: opening and closing targets, subscriptions,
// health, decisions, taps and leader election are the engine's, handed in
// through Config. It never imports a node type.
package sinkloop
