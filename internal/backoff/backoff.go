// Package backoff is pipeline's one retry backoff: exponential, capped,
// with jitter. A failed write, full read, node run, NATS dial or watch,
// and template reload each wait Delay(attempt) before their next attempt,
// so that failures that happen together (the agents of a hub losing it
// at once, every key of a map that filled) do not retry together.
//
// It is not a retry loop: the caller keeps its attempt count (per key, in
// the sink loop) and its own timer or clock, so that time stays injected.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Policy is an exponential backoff: Base doubled per earlier attempt, up
// to Cap.
type Policy struct {
	Base, Cap time.Duration
}

// Default is the policy of every retry but a template's reload: from
// 100ms to 30s.
var Default = Policy{Base: 100 * time.Millisecond, Cap: 30 * time.Second}

// Delay is the wait before the attempt after attempt (0: after the
// first failure): the policy's step for attempt, Base doubled attempt
// times and capped at Cap, at random in its upper half. The upper bound
// is the step itself, so a caller that waits the step is never early.
func (p Policy) Delay(attempt int) time.Duration {
	d := p.Step(attempt)
	if d < 2 {
		return d
	}
	return d - rand.N(d/2)
}

// Step is the policy's wait for attempt without jitter: the upper bound
// of Delay.
func (p Policy) Step(attempt int) time.Duration {
	d := p.Base
	if d <= 0 {
		return 0
	}
	for i := 0; i < attempt && d < p.Cap; i++ {
		d *= 2
	}
	return min(d, p.Cap)
}

// Delay is Default.Delay.
func Delay(attempt int) time.Duration { return Default.Delay(attempt) }
