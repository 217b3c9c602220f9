// Package audit declares sink "audit": an append-only, tamper-evident trail
// of every change that reaches it (JSON lines, hash-chained, rotated by
// size, old files pruned by count). Its schema is complete so configurations
// validate today; its runtime is not written yet, so `pipeline run` refuses
// it (Status Planned).
package audit
