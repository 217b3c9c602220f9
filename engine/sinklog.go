package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/pipeline/pipeline/engine/node"
)

// logApplied says at info what one round of a sink did to its target: a
// full reconcile or an incremental batch, with its upserts, deletes,
// failures and duration. A round that wrote nothing is logged only when
// quiet is false. Call it after the round's entries were applied, so that
// their Err fields are set.
func logApplied(log *slog.Logger, round string, took time.Duration, ups, dels []node.Entry, quiet bool) {
	if quiet && len(ups)+len(dels) == 0 {
		return
	}
	failed := 0
	for _, batch := range [][]node.Entry{ups, dels} {
		for _, e := range batch {
			if e.Err != nil {
				failed++
			}
		}
	}
	log.Info(round, "upserts", len(ups), "deletes", len(dels), "failed", failed, "duration", took.Round(time.Microsecond))
}

// The rounds logApplied names.
const (
	roundFull  = "full reconcile"
	roundBatch = "batch applied"
)

// applyBatch applies one incremental batch and logs it.
func (s *sinkLoop) applyBatch(ctx context.Context, ups, dels []node.Entry) {
	start := time.Now()
	s.apply(ctx, ups, dels)
	logApplied(s.log, roundBatch, time.Since(start), ups, dels, true)
}

// logFull logs a full reconcile that started at start. One that writes
// nothing is logged once the input is synced (a restart over an equal
// target says so), not before (the input is still arriving).
func (s *sinkLoop) logFull(start time.Time, ups, dels []node.Entry) {
	logApplied(s.log, roundFull, time.Since(start), ups, dels, !s.synced)
}
