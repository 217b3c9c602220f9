// Package debounce implements transform "debounce": it coalesces deltas per
// key (the last one wins) and flushes them as one batch once `interval` has
// passed without a new change (trailing edge), but never later than
// `max_wait` after the first pending change, so constant churn cannot
// starve downstream. The input's initial state and every Reset pass at once.
//
// To tell created from modified in its metrics, and to drop the delete of a
// key created and deleted within one window, the transform keeps the set of
// keys it has emitted: its output as downstream sees it.
//
// Time: the package reads time through node.Env (env.Now, and the timer of
// node.ConsumeTimed). Running, that is the wall clock, and the unit tests
// run it under testing/synctest with no sleeps; `pipeline test` hands it a
// virtual clock, so config tests pass intervals in no real time.
//
// Not here: holding deletions back for a delay is transform "grace_period".
package debounce
