// Package audit implements sink "audit": an append-only, tamper-evident
// trail of every change that reaches it and of every decision the engine
// hands it (node.DecisionRecorder). Lines are JSON, chained with SHA-256,
// rotated by size, pruned by count and age with a line recording each cut,
// and summed up in a checkpoint file. Verify checks a trail; the CLI's
// `pipeline audit verify` is a thin view over it.
//
// It is not a log of the program (log/slog is) nor a debugging printer of
// deltas (sink "log" is).
package audit
