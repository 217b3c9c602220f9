// Package sinkloop is the reconcile loop of one keyed sink: it keeps the
// desired state from the sink's input in target terms
// (node.Target.Prepare), batches what arrives together, writes it
// (Update, Delete), retries failed entries with per-key backoff, runs
// full reconciles (read the target, compare, write the difference) at
// start, when the input syncs and every resync, and never deletes before
// the input is synced.
//
// A Loop lives as long as its sink node; each Run builds its state afresh
// (state, loop.go), so nothing is reset by hand. The state has three
// parts, each key's share of them in one keyState (keys.go):
//   - desired (desired.go, collide.go): each input key's target key, the
//     claims of input keys on target keys, the target keys several input
//     keys claim (on_conflict) and each target key's wanted entry;
//   - actual (actual.go): what the target held at each key when last
//     read, as the loop's own writes changed it since, with, for a target
//     written in fixed-width chunks (node.Chunked), the same entries by
//     their bytes (byteindex), so that a full read finds an entry it
//     knows with one probe;
//   - the core (loop.go, apply.go, full.go, brake.go): the dirty list and
//     the retry heap, reconcile.Decide over each key's want and actual,
//     compared entry to entry, the batches and the deletion brake.
//
// It is not the engine: opening and closing targets, subscriptions,
// health, decisions, taps and leader election are the engine's, handed in
// through Config. It never imports a node type.
package sinkloop
