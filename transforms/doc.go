// Package transforms is the room of the transform types, one package each:
// extract (objects -> records through HCL expressions), filter (keep records
// where an expression holds), debounce (coalesce bursts per key) and
// graceperiod (hold deletions for a delay; a re-add cancels). A transform
// consumes one collection and publishes another; it never imports another
// node package or the engine.
package transforms
