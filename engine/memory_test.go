package engine

import (
	"sync"
	"testing"
)

// TestStartupMemoryFreesOnceWhenEverySinkStarted: the memory of the
// initial sync goes back to the system once, after the last sink starts,
// however the sinks' starts interleave.
func TestStartupMemoryFreesOnceWhenEverySinkStarted(t *testing.T) {
	m := newStartupMemory(3)
	var mu sync.Mutex
	frees := 0
	m.free = func() { mu.Lock(); frees++; mu.Unlock() }
	m.sinkStarted()
	m.sinkStarted()
	if frees != 0 {
		t.Fatalf("freed after 2 of 3 sinks started")
	}
	var wg sync.WaitGroup
	for range 4 { // the third start, and calls no sink makes (a restarted loop)
		wg.Add(1)
		go func() { defer wg.Done(); m.sinkStarted() }()
	}
	wg.Wait()
	if frees != 1 {
		t.Fatalf("freed %d times, want once", frees)
	}
}
