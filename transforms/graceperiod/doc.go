// Package graceperiod implements transform "grace_period": a deletion waits
// `delay` before it passes downstream; an upsert of the same key during the
// wait cancels it (and passes if its value changed), and a new deletion
// restarts the wait. Upserts pass at once. A Reset of the input turns keys
// missing from the new state into pending deletions, never immediate ones.
//
// Pending deletions live in one min-heap by due time (container/heap, with
// each item's heap index tracked so a cancel is O(log n)) and one timer set
// for the earliest of them: 100,000 pending deletions cost memory, not
// goroutines or timers. Transform.Pending lists them for plan and explain.
//
// Time: the package calls time.Now and time.NewTimer directly, and its tests
// run under testing/synctest, whose bubble gives a fake, deterministic clock.
// That is the clock abstraction of this project: nothing to inject, no
// sleeps in tests, and the tested code is the production code.
//
// Not here: coalescing bursts of changes is transform "debounce".
package graceperiod
