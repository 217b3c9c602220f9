package audit

import "sync"

// gate is the fail = "closed" switch other sinks wait on.
type gate struct {
	mu      sync.Mutex
	enabled bool
	ch      chan struct{} // non-nil while shut
}

func newGate(closed bool) *gate {
	g := &gate{enabled: closed}
	if closed {
		g.ch = make(chan struct{}) // shut until the trail first opens
	}
	return g
}

func (g *gate) wait() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch == nil {
		return nil
	}
	return g.ch
}

func (g *gate) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.enabled && g.ch == nil {
		g.ch = make(chan struct{})
	}
}

func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch != nil {
		close(g.ch)
		g.ch = nil
	}
}
