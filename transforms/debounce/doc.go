// Package debounce implements transform "debounce": it coalesces deltas per
// key (the last one wins) and flushes them as one batch once `interval` has
// passed without a new change, but never later than `max_wait` after the
// first pending change, so constant churn cannot starve downstream. Initial
// states and resets pass at once. Holding deletions back is graceperiod.
//
// Time: the package uses the time package directly and its tests run under
// testing/synctest, whose bubble gives a fake, deterministic clock; that is
// the clock abstraction of this project.
package debounce
