// Package graceperiod implements transform "grace_period": a deletion waits
// `delay` before it passes downstream; an upsert of the same key during the
// wait cancels it, and a new deletion restarts the wait. Pending deletions
// live in one min-heap served by one timer, so 100,000 of them cost memory,
// not goroutines or timers. Coalescing bursts is debounce.
//
// Time: the package uses the time package directly and its tests run under
// testing/synctest (a fake, deterministic clock per test bubble).
package graceperiod
