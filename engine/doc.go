// Package engine compiles a loaded configuration into a typed graph of nodes
// and runs it: one collection per node output, bounded subscriptions between
// nodes that resynchronise instead of dropping, a supervisor that restarts a
// failing node with backoff without stopping the others, and the sink
// reconcile loop (batching, retries, periodic full reconcile, prune).
//
// The language itself (parsing, variables, attribute handles) is package
// schema; the contract with node types is package node; node types live under
// sources/, transforms/ and sinks/ and are never imported here.
package engine
