// Package engine compiles a loaded configuration into a typed graph of nodes
// and runs it: one collection per node output, bounded subscriptions between
// nodes that resynchronise instead of dropping, a supervisor that restarts a
// failing node with backoff without stopping the others, and, for each sink,
// its target opened and its reconcile loop (package sinkloop) wired to the
// runtime's health, decisions, tap, metrics and leader election.
//
// The language itself (parsing, variables, attribute handles) is package
// schema; the contract with node types is package node; node types live under
// sources/, transforms/ and sinks/ and are never imported here.
package engine
