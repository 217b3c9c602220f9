// Package plan computes what run would do to every sink's target, writing
// nothing: it runs the sources and transforms once on the runtime
// (engine.Runtime.SyncOnce), then opens each target read-only, prepares the
// input as the sink loop does and diffs it with what the target holds
// (reconcile.Diff, the comparison run uses), with the deletion brake, dry
// runs and warnings run would meet.
package plan
