package backoff

import (
	"testing"
	"time"
)

// TestDelay: every delay lies in the upper half of its step, the steps
// double from Base up to Cap, and the delays are spread (not all equal).
func TestDelay(t *testing.T) {
	p := Policy{Base: 100 * time.Millisecond, Cap: 30 * time.Second}
	wantSteps := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 3200 * time.Millisecond, 6400 * time.Millisecond, 12800 * time.Millisecond, 25600 * time.Millisecond,
		30 * time.Second, 30 * time.Second}
	for attempt, want := range wantSteps {
		if got := p.Step(attempt); got != want {
			t.Errorf("Step(%d) = %v, want %v", attempt, got, want)
		}
		seen := map[time.Duration]bool{}
		for range 200 {
			d := p.Delay(attempt)
			if d <= want/2 || d > want {
				t.Fatalf("Delay(%d) = %v, want in (%v, %v]", attempt, d, want/2, want)
			}
			seen[d] = true
		}
		if len(seen) < 2 {
			t.Errorf("Delay(%d) has no jitter: always %v", attempt, p.Step(attempt))
		}
	}
	for _, attempt := range []int{-1, 1000, 1 << 30} {
		if d := p.Delay(attempt); d <= 0 || d > p.Cap {
			t.Errorf("Delay(%d) = %v, want in (0, %v]", attempt, d, p.Cap)
		}
	}
}
