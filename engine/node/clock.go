package node

import "time"

// Clock is the time a node reads and waits on. Running nodes get the wall
// clock; `pipeline test` hands them a virtual one, so a debounce interval or
// a grace period passes in no real time. A nil Clock in Env means the wall
// clock (see Env.Now and Env.NewTimer).
type Clock interface {
	Now() time.Time
	// NewTimer returns a stopped-or-running timer as time.NewTimer does.
	NewTimer(d time.Duration) Timer
}

// Timer is a time.Timer behind an interface. Reset and Stop follow
// time.Timer's Go 1.23 semantics: after either, no stale value is received.
type Timer interface {
	C() <-chan time.Time
	Reset(d time.Duration) bool
	Stop() bool
}

// WallClock is the real clock.
type WallClock struct{}

// Now implements Clock.
func (WallClock) Now() time.Time { return time.Now() }

// NewTimer implements Clock.
func (WallClock) NewTimer(d time.Duration) Timer { return wallTimer{time.NewTimer(d)} }

type wallTimer struct{ t *time.Timer }

func (w wallTimer) C() <-chan time.Time        { return w.t.C }
func (w wallTimer) Reset(d time.Duration) bool { return w.t.Reset(d) }
func (w wallTimer) Stop() bool                 { return w.t.Stop() }

// clock returns the node's clock, the wall clock when none was given.
func (e Env) clock() Clock {
	if e.Clock == nil {
		return WallClock{}
	}
	return e.Clock
}

// Now is the node's current time: the wall clock's, or the virtual time of
// a config test.
func (e Env) Now() time.Time { return e.clock().Now() }

// Poller is an Input that can also be polled without blocking, with Ready
// signalled when an event may be waiting. The engine's inputs implement it;
// ConsumeTimed uses it so that a transform holds no event in a second
// goroutine, which lets a config test tell when the graph is at rest.
type Poller interface {
	Input
	Poll() (Event, bool)
	Ready() <-chan struct{}
}

var (
	_ Clock = WallClock{}
	_ Timer = wallTimer{}
)
