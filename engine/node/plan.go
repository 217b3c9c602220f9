package node

import (
	"context"
	"time"
)

// Describer is the read-only planning hook of the sink contract: a target
// opened with ModePlan says what it is, so plan can print it beside the
// target's diff. Every sink type's target implements it; the engine falls
// back to the sink's address alone for one that does not.
type Describer interface {
	// Describe returns what the target is, from what Open found. It does no
	// I/O and never writes.
	Describe() TargetInfo
	// Show renders an entry's value as a reader of the plan expects it (a
	// map's u32 as a number, not the hex of its bytes). It does no I/O.
	Show(e Entry) string
}

// DryRunner is implemented by a target whose backend can compute a write
// without making it (a Kubernetes API server's dryRun=All): plan asks it
// about each create and update and shows the lines it returns under the
// change (a field-level diff), so what the backend adds (defaults, its
// own checks) is in the plan; an error (a rejection) is shown instead. It
// never writes.
type DryRunner interface {
	DryRun(ctx context.Context, e Entry) (DryRun, error)
}

// DryRun is what one write would do, as a DryRunner's backend says.
type DryRun struct {
	// Lines are the field-level diff: "+ path = value", "~ path: old =>
	// new", "- path".
	Lines []string
	// Refused is set when the write would be refused before it reaches
	// the backend: what it would write over exists and is not the sink's,
	// and the configuration does not say to adopt it. It says why, and
	// what to write to adopt it; Lines are then empty.
	Refused string
	// Adopts is set when the write would take over what exists and is not
	// the sink's, because the configuration says to adopt it: why it is
	// not the sink's now.
	Adopts string
}

// TargetInfo describes one sink's target for plan.
type TargetInfo struct {
	// Location names the target: a pin path, "bucket pod-ips (prefix v1.)",
	// a subject, a file.
	Location string `json:"location"`
	// Kind is the target's kind: a map type ("hash"), "kv_bucket",
	// "publish", "audit_trail", "log".
	Kind string `json:"kind"`
	// Exists is false when run would create the target (a map not yet
	// pinned, a bucket not yet created). Append-only targets exist.
	Exists bool `json:"exists"`
	// MaxEntries bounds the entries the target holds; 0: no bound.
	MaxEntries int `json:"max_entries,omitempty"`
	// Replace, when set, says why run would replace the existing target
	// (remove it and create it empty): plan shows "must be replaced".
	Replace string `json:"replace,omitempty"`
	// Note, when set, is what a reader must know about how the target
	// was read: plan shows it under the target's heading.
	Note string `json:"note,omitempty"`
}

// Running is the running instance a plan compares with (plan --against):
// a target whose state lives in that process, not in a backend plan can
// read (sink "prometheus"'s series), reads it there.
type Running struct {
	// MetricsURL is the instance's /metrics.
	MetricsURL string
}

type runningKey struct{}

// WithRunning returns ctx carrying the running instance r, for the
// targets plan opens with ModePlan.
func WithRunning(ctx context.Context, r Running) context.Context {
	return context.WithValue(ctx, runningKey{}, r)
}

// RunningFrom returns the running instance ctx carries, if any.
func RunningFrom(ctx context.Context) (Running, bool) {
	r, ok := ctx.Value(runningKey{}).(Running)
	return r, ok
}

// Noun is implemented by a source whose records are objects of one kind,
// so that plan names an entry's origin as "pod shop/web-1" rather than by
// the source's address.
type Noun interface {
	// Noun is the kind of the source's objects, singular ("pod").
	Noun() string
}

// PendingLister is implemented by a transform that holds deletions back
// (grace_period): plan and the admin endpoint show what it holds.
type PendingLister interface {
	// Pending lists the deletions waiting, earliest first; PendingDue
	// tells when the deletion of key k passes downstream (explain). Both
	// are safe to call from any goroutine while the transform runs.
	Pending() []PendingDeletion
	PendingDue(k Key) (due time.Time, ok bool)
}

// PendingDeletion is a deletion a transform holds back until Due.
type PendingDeletion struct {
	Key Key       `json:"key"`
	Due time.Time `json:"due"` // when the deletion passes downstream
}
