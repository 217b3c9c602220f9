package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/pipeline/pipeline/engine/node"
)

// written counts what one round of a sink wrote.
type written struct{ ups, dels, failed int }

// add counts the entries of b, applied (their Err fields set).
func (w *written) add(b *batch) {
	w.ups, w.dels = w.ups+len(b.ups), w.dels+len(b.dels)
	for _, es := range [][]node.Entry{b.ups, b.dels} {
		for _, e := range es {
			if e.Err != nil {
				w.failed++
			}
		}
	}
}

// logApplied says at info what one round of a sink did to its target: a
// full reconcile or an incremental batch, with its upserts, deletes,
// failures and duration. A round that wrote nothing is logged only when
// quiet is false.
func logApplied(log *slog.Logger, round string, took time.Duration, w written, quiet bool) {
	if quiet && w.ups+w.dels == 0 {
		return
	}
	log.Info(round, "upserts", w.ups, "deletes", w.dels, "failed", w.failed, "duration", took.Round(time.Microsecond))
}

// The rounds logApplied names.
const (
	roundFull  = "full reconcile"
	roundBatch = "batch applied"
)

// applyBatch applies one incremental batch and logs it.
func (s *sinkLoop) applyBatch(ctx context.Context, b *batch) {
	start := time.Now()
	s.apply(ctx, b)
	var w written
	w.add(b)
	logApplied(s.log, roundBatch, time.Since(start), w, true)
}

// logFull logs a full reconcile that started at start. One that writes
// nothing is logged once the input is synced (a restart over an equal
// target says so), not before (the input is still arriving).
func (s *sinkLoop) logFull(start time.Time, w written) {
	logApplied(s.log, roundFull, time.Since(start), w, !s.synced)
}
