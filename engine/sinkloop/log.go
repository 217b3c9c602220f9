package sinkloop

import (
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

// logRound says at info what one round of a sink that started at start
// did to its target: a full reconcile or an incremental batch, with its
// upserts, deletes, failures and duration. A round that wrote nothing is
// logged only when quiet is false.
func logRound(log *slog.Logger, round string, start time.Time, w written, quiet bool) {
	if quiet && w.ups+w.dels+w.failed == 0 {
		return
	}
	log.Info(round, "upserts", w.ups, "deletes", w.dels, "failed", w.failed, "duration", time.Since(start).Round(time.Microsecond))
}
