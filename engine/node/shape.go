package node

import (
	"context"
	"errors"
)

// A sink's target has one of three shapes, and the engine writes, plans
// and explains each its own way:
//
//   - keyed (Target): entries compared one by one with what Actual reads;
//     ebpf_map, nats_kv, kubernetes, prometheus. A target of fixed-width
//     entries may add the one fast path, Chunked.
//   - document (Document): one document rendered from the whole sorted
//     collection; Update and Delete only record entries, and Commit
//     renders, compares with the document in place and replaces it once
//     per round; template.
//   - append (Actual returns ErrNoActualState): lines appended, nothing
//     to read back or prune; log, audit, nats.
type Shape int

// The shapes of ShapeOf.
const (
	ShapeKeyed Shape = iota
	ShapeDocument
	ShapeAppend
)

var shapeNames = [...]string{ShapeKeyed: "keyed", ShapeDocument: "document", ShapeAppend: "append"}

func (s Shape) String() string {
	if s < 0 || int(s) >= len(shapeNames) {
		return "unknown"
	}
	return shapeNames[s]
}

// ShapeOf is t's shape, given the error of its Actual (an append target
// says ErrNoActualState; nil for a target not read).
func ShapeOf(t Target, actualErr error) Shape {
	switch {
	case errors.Is(actualErr, ErrNoActualState):
		return ShapeAppend
	case isDocument(t):
		return ShapeDocument
	}
	return ShapeKeyed
}

func isDocument(t Target) bool { _, ok := t.(Document); return ok }

// Document is a target of the document shape: one document (a file)
// rendered from every entry. Its Update and Delete only record entries;
// the loop calls Commit at the end of every round of writes (after the
// round's Update and Delete calls) and of every full reconcile. Commit
// runs on the sink loop's goroutine and may block on I/O bounded by ctx.
//
// Commit returns two kinds of entries. Those with Err nil are what it
// wrote as a whole, if anything, for `pipeline tap` to show (a file's path
// with its digest and size, never its text). Those with Err set name the
// keys whose write failed in the round, whether the round's Update or
// Delete said so or not: a wanted entry (Value: the wanted one) the
// document does not hold, or a deleted one (Value: what the document
// still holds) it holds. The loop takes back its record of their writes
// and handles them as any failed write: per-key status, backoff, the
// round's log line, and a retry that calls Update or Delete again, then
// Commit.
//
// PlanFile is plan's view of the document: it renders desired (sorted by
// key) and compares it with the document in place, so plan shows how the
// file would change as a unified diff instead of a change per entry. It
// writes nothing and runs no command.
type Document interface {
	Target
	Commit(ctx context.Context, r Round) []Entry
	PlanFile(ctx context.Context, desired []Entry) (FilePlan, error)
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
}

// Renderer is implemented by a Sink whose target is one document rendered
// from every entry (a Document's file, or a page of series): Render returns the document the
// entries (sorted by key) render to, without opening or writing anything.
// `pipeline test` uses it to check the rendered content, and explain to
// say which lines a key produced.
type Renderer interface {
	Render(entries []Entry) ([]byte, error)
}

// FilePlan is how a Document's file would change.
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
