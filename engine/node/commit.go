package node

import "context"

// Committer is implemented by a target that acts once per round: one
// that writes its entries as one whole, such as a file rendered from
// every record (its Update and Delete only record the entries), or one
// that shows how many entries it holds (a BPF map's fill level). The sink
// loop calls Commit at the end of every round of writes (after the
// round's Update and Delete calls) and of every full reconcile. Commit
// runs on the sink loop's goroutine and may block on I/O bounded by ctx.
//
// It returns two kinds of entries. Those with Err nil are what it wrote
// as a whole, if anything, for `pipeline tap` to show (a file's path with
// its digest and size, never its text). Those with Err set name the keys
// whose write failed in the round, whether the round's Update or Delete
// said so or not: a wanted entry (Value: the wanted one) the target does
// not hold, or a deleted one (Value: what the target still holds) it
// holds. The loop takes back its record of their writes and handles them
// as any failed write: per-key status, backoff, the round's log line, and
// a retry that calls Update or Delete again, then Commit.
type Committer interface {
	Commit(ctx context.Context, r Round) []Entry
}

// Round says what the round Commit ends was.
type Round struct {
	// Synced is true once the sink's input has synced: before, the target
	// holds only part of the collection, and one that renders the whole
	// must write nothing.
	Synced bool
	// Full is true at the end of a full reconcile (at start, when the input
	// syncs and every resync): the target compares what it would write
	// with what the world holds, and repairs a difference.
	Full bool
	// Actual is how many entries the target holds after the round, as far
	// as the loop knows (a BPF map cannot count its entries without
	// reading them all).
	Actual int
}

// Renderer is implemented by a Sink whose target is one document rendered
// from every entry (a Committer's file): Render returns the document the
// entries (sorted by key) render to, without opening or writing anything.
// `pipeline test` uses it to check the rendered content, and explain to
// say which lines a key produced.
type Renderer interface {
	Render(entries []Entry) ([]byte, error)
}

// FilePlanner is implemented by a target that writes its entries as one
// rendered file (a Committer): plan shows how the file would change, as a
// unified diff, instead of a change per entry. PlanFile renders desired
// (sorted by key) and compares it with the file on disk; it writes nothing
// and runs no command.
type FilePlanner interface {
	PlanFile(ctx context.Context, desired []Entry) (FilePlan, error)
}

// FilePlan is how a FilePlanner's file would change.
type FilePlan struct {
	Path    string `json:"path"`
	Exists  bool   `json:"exists"`
	Changed bool   `json:"changed"`
	// Diff is a unified diff from the file on disk to the render, with
	// every sensitive value masked; empty when nothing changes.
	Diff string `json:"diff,omitempty"`
}

// Explainer is implemented by a target that can say more about one of its
// keys than its entry: which lines of a rendered file the key produced
// and what keeps the target from writing; a Kubernetes object's kind, last
// apply or delete with its resourceVersion, and owner. `pipeline explain` shows the
// lines. Explain runs on the sink loop's goroutine, reads no more than
// the target holds in memory and shows no sensitive value.
type Explainer interface {
	Explain(key Key) []string
}
