package nodetest

import (
	"bytes"
	"sync"
)

// LogBuffer is a bytes.Buffer that a logger's goroutines and a test may
// use at once: the destination of a test's slog handler.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
