package node

import (
	"time"

	"github.com/zclconf/go-cty/cty"
)

// Key is the canonical string of an entry's identity ("10.0.0.7/32",
// "shop/backend-1").
type Key = string

// Record is a key and its value. Once emitted a record is never mutated.
type Record struct {
	Key   Key
	Value cty.Value
}

// Delta is an upsert or a delete of one key.
type Delta struct {
	Key    Key
	Value  cty.Value // cty.NilVal for a delete
	Delete bool
	// Time is when the change entered the pipeline at its source; it feeds
	// the change-latency histogram. Transforms carry it forward.
	Time time.Time
}

// Upsert returns an upsert delta.
func Upsert(k Key, v cty.Value, t time.Time) Delta { return Delta{Key: k, Value: v, Time: t} }

// Remove returns a delete delta.
func Remove(k Key, t time.Time) Delta { return Delta{Key: k, Delete: true, Time: t} }

// Event is what a consumer receives from its input.
//
// A Reset event carries the input's complete state in Snapshot: the consumer
// replaces whatever it held (the first event of every subscription is a Reset,
// and so is the event after the consumer fell behind and its queue
// overflowed). Otherwise Deltas holds one or more batches in order.
type Event struct {
	Reset    bool
	Snapshot []Record
	Deltas   []Delta
	// Synced is true once every source upstream has delivered its initial
	// state. It never goes back to false for a subscription.
	Synced bool
	// Generation is the input collection's generation after this event.
	Generation uint64
}
