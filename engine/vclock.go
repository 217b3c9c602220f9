package engine

import (
	"sync"
	"time"

	"github.com/pipeline/pipeline/engine/node"
)

// VirtualClock is a node.Clock whose time moves only when a config test
// moves it. It also tells the test when every fired timer was taken up:
// a fired timer is outstanding until its owner resets or stops it, which
// node.ConsumeTimed does after every wake-up.
type VirtualClock struct {
	mu          sync.Mutex
	now         time.Time
	timers      map[*vtimer]struct{}
	outstanding int
}

// NewVirtualClock returns a clock standing at start.
func NewVirtualClock(start time.Time) *VirtualClock {
	return &VirtualClock{now: start, timers: map[*vtimer]struct{}{}}
}

type vtimer struct {
	c      *VirtualClock
	ch     chan time.Time
	when   time.Time
	active bool
	fired  bool // fired and not yet reset or stopped by its owner
}

// Now implements node.Clock.
func (c *VirtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer implements node.Clock.
func (c *VirtualClock) NewTimer(d time.Duration) node.Timer {
	t := &vtimer{c: c, ch: make(chan time.Time, 1)}
	c.mu.Lock()
	c.timers[t] = struct{}{}
	c.mu.Unlock()
	t.Reset(d)
	return t
}

func (t *vtimer) C() <-chan time.Time { return t.ch }

func (t *vtimer) Reset(d time.Duration) bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	was := t.stopLocked()
	t.when, t.active = c.now.Add(d), true
	if d <= 0 {
		c.fireLocked(t)
	}
	return was
}

func (t *vtimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.stopLocked()
}

// stopLocked disarms t and takes back a value it sent and nobody received.
func (t *vtimer) stopLocked() bool {
	was := t.active
	t.active = false
	if t.fired {
		t.fired = false
		t.c.outstanding--
	}
	select {
	case <-t.ch:
	default:
	}
	return was
}

func (c *VirtualClock) fireLocked(t *vtimer) {
	t.active = false
	select {
	case t.ch <- c.now:
	default:
	}
	if !t.fired {
		t.fired = true
		c.outstanding++
	}
}

// next returns the earliest time an armed timer waits for.
func (c *VirtualClock) next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var due time.Time
	ok := false
	for t := range c.timers {
		if t.active && (!ok || t.when.Before(due)) {
			due, ok = t.when, true
		}
	}
	return due, ok
}

// set moves the clock to at (never backwards) and fires every timer due.
func (c *VirtualClock) set(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if at.After(c.now) {
		c.now = at
	}
	for t := range c.timers {
		if t.active && !t.when.After(c.now) {
			c.fireLocked(t)
		}
	}
}

// settled reports whether every fired timer was taken up.
func (c *VirtualClock) settled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.outstanding == 0
}

var _ node.Clock = (*VirtualClock)(nil)
