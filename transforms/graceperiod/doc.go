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
// Time: the package reads time through node.Env (env.Now, and the timer of
// node.ConsumeTimed). Running, that is the wall clock, and the unit tests
// run it under testing/synctest with no sleeps; `pipeline test` hands it a
// virtual clock, so config tests pass intervals in no real time.
//
// Not here: coalescing bursts of changes is transform "debounce".
package graceperiod
