// Package engine runs a compiled graph (package engine/graph): one
// collection per node output, bounded subscriptions between nodes that
// resynchronise instead of dropping, the unions of fan-ins, a supervisor
// that restarts a failing node with backoff without stopping the others,
// reloads that keep the unchanged nodes running, and, for each sink, its
// target opened and its reconcile loop (package engine/sinkloop) wired to
// the runtime's health, decisions, tap, metrics and leader election.
// Explain, tap and the config tests' sandbox read the running graph here;
// plan (package engine/plan) runs it once through SyncOnce.
//
// The language itself (parsing, variables, attribute handles) is package
// schema; the contract with node types is package node; node types live under
// sources/, transforms/ and sinks/ and are never imported here.
package engine
