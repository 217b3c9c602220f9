package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/pipeline/pipeline/engine/node"
)

// apply writes ups and dels, records the outcome per entry and schedules
// retries for failures. times holds the receipt time of each key's change.
func (s *sinkLoop) apply(ctx context.Context, ups, dels []node.Entry, times map[node.Key]time.Time) {
	if len(ups) > 0 {
		s.target.Update(ctx, ups)
		for _, e := range ups {
			s.outcome(e, false, times)
		}
	}
	if len(dels) > 0 {
		s.target.Delete(ctx, dels)
		for _, e := range dels {
			s.outcome(e, true, times)
		}
	}
	if len(ups)+len(dels) > 0 {
		s.log.Debug("applied", "op", "batch", "count", len(ups)+len(dels))
	}
	s.updateHealth()
}

func (s *sinkLoop) outcome(e node.Entry, del bool, times map[node.Key]time.Time) {
	if e.Err != nil {
		if del {
			s.met.delErr.Inc()
		} else {
			s.met.writeErr.Inc()
		}
		n := s.attempts[e.Key]
		s.attempts[e.Key] = n + 1
		s.retryAt[e.Key] = time.Now().Add(backoff(n))
		op := "update"
		if del {
			op = "delete"
		}
		s.log.Warn("write failed; will retry", "op", op, "key", e.Key, "err", e.Err, "count", n+1)
		return
	}
	if del {
		s.met.delOK.Inc()
		delete(s.applied, e.Key)
		delete(s.written, e.Key)
	} else {
		s.met.writeOK.Inc()
		e.Err = nil
		s.applied[e.Key] = e
		s.written[e.Key] = struct{}{}
	}
	delete(s.attempts, e.Key)
	if t := times[e.Key]; !t.IsZero() {
		s.met.latency.Observe(time.Since(t).Seconds())
	}
}

func (s *sinkLoop) updateHealth() {
	failing := len(s.retryAt)
	switch {
	case failing > 0:
		s.h.set(false, node.Degraded, fmt.Sprintf("%d entries failing; retrying with backoff", failing))
	case !s.synced:
		s.h.set(false, node.Pending, "waiting for input to sync")
	default:
		s.h.set(false, node.Healthy, "")
	}
}

// armRetry points the timer at the earliest due retry.
func (s *sinkLoop) armRetry(t *time.Timer) {
	var next time.Time
	if s.needFull {
		next = s.fullRetry
	}
	for _, due := range s.retryAt {
		if next.IsZero() || due.Before(next) {
			next = due
		}
	}
	if next.IsZero() {
		next = time.Now().Add(time.Hour)
	}
	t.Reset(time.Until(next))
}

// dueRetries moves due keys back to pending.
func (s *sinkLoop) dueRetries() {
	now := time.Now()
	for k, due := range s.retryAt {
		if due.After(now) {
			continue
		}
		delete(s.retryAt, k)
		s.touch(k, time.Time{})
	}
}

// backoff is exponential from 100ms to 30s.
func backoff(attempt int) time.Duration {
	d := 100 * time.Millisecond
	for i := 0; i < attempt && d < 30*time.Second; i++ {
		d *= 2
	}
	if d > 30*time.Second {
		d = 30 * time.Second
	}
	return d
}
