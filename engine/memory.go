package engine

import (
	"runtime/debug"
	"sync/atomic"
)

// startupMemory returns the memory of the initial sync to the operating
// system once every sink has written its first full state. Start-up
// allocates far more than the steady state holds (a LIST response is
// decoded, converted and diffed once, then dropped), and
// the Go runtime otherwise keeps those freed pages resident for minutes:
// on a DaemonSet that is the difference every node pays. It runs once per
// Runtime, in the goroutine of the last sink to start (one forced GC over
// a heap that is by then small).
type startupMemory struct {
	waiting atomic.Int64 // sinks that have not started yet
	free    func()       // debug.FreeOSMemory; a test counts calls
}

func newStartupMemory(sinks int) *startupMemory {
	m := &startupMemory{free: debug.FreeOSMemory}
	m.waiting.Store(int64(sinks))
	return m
}

// sinkStarted is called once by each sink loop after its first full
// reconcile over a synced input; a nil m (a reload's new sink) does nothing.
func (m *startupMemory) sinkStarted() {
	if m != nil && m.waiting.Add(-1) == 0 {
		m.free()
	}
}
