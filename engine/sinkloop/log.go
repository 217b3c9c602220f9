package sinkloop

import (
	"context"
	"log/slog"
	"time"
)

// written counts what one round of a sink wrote.
type written struct{ ups, dels, failed int }

// count counts one entry written (ok) or failed.
func (w *written) count(ok, del bool) {
	switch {
	case !ok:
		w.failed++
	case del:
		w.dels++
	default:
		w.ups++
	}
}

// plus adds o's counts to w's.
func (w *written) plus(o written) {
	w.ups, w.dels, w.failed = w.ups+o.ups, w.dels+o.dels, w.failed+o.failed
}

// logApplied says at info what one round of a sink did to its target: a
// full reconcile or an incremental batch, with its upserts, deletes,
// failures and duration. A round that wrote nothing is logged only when
// quiet is false.
func logApplied(log *slog.Logger, round string, took time.Duration, w written, quiet bool) {
	if quiet && w.ups+w.dels+w.failed == 0 {
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
func (s *state) applyBatch(ctx context.Context, b *batch) {
	start := time.Now()
	w := s.apply(ctx, b) // before time.Since: arguments are evaluated in order
	logApplied(s.log, roundBatch, time.Since(start), w, true)
}

// logFull logs a full reconcile that started at start. One that writes
// nothing is logged once the input is synced (a restart over an equal
// target says so), not before (the input is still arriving).
func (s *state) logFull(start time.Time, w written) {
	logApplied(s.log, roundFull, time.Since(start), w, !s.synced)
}
