package nodetest

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
)

// Output is an in-memory node.Output that records every batch and keeps the
// resulting state.
type Output struct {
	mu      sync.Mutex
	state   map[node.Key]cty.Value
	batches [][]node.Delta
	synced  bool
	changed chan struct{}
}

// NewOutput returns an empty Output.
func NewOutput() *Output {
	return &Output{state: map[node.Key]cty.Value{}, changed: make(chan struct{}, 1)}
}

var _ node.Holder = (*Output)(nil)

// Apply implements node.Output.
func (o *Output) Apply(deltas []node.Delta) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.apply(deltas)
}

func (o *Output) apply(deltas []node.Delta) {
	if len(deltas) == 0 {
		return
	}
	for i := range deltas { // as the engine's collections hand them on: values built
		d := &deltas[i]
		if d.Delete {
			delete(o.state, d.Key)
		} else {
			d.Value = node.Unpack(d.Value)
			o.state[d.Key] = d.Value
		}
	}
	o.batches = append(o.batches, deltas)
	o.signal()
}

// signal tells Changed's reader of a change.
func (o *Output) signal() {
	select {
	case o.changed <- struct{}{}:
	default:
	}
}

// Replace implements node.Output.
func (o *Output) Replace(records []node.Record) {
	o.mu.Lock()
	defer o.mu.Unlock()
	want := map[node.Key]cty.Value{}
	var deltas []node.Delta
	for _, r := range records {
		v := node.Unpack(r.Value)
		want[r.Key] = v
		if old, ok := o.state[r.Key]; !ok || !old.RawEquals(v) {
			deltas = append(deltas, node.Delta{Key: r.Key, Value: v, Origin: r.Origin})
		}
	}
	for k := range o.state {
		if _, ok := want[k]; !ok {
			deltas = append(deltas, node.Delta{Key: k, Delete: true})
		}
	}
	o.apply(deltas)
}

// MarkSynced implements node.Output.
func (o *Output) MarkSynced() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.synced = true
	o.signal()
}

// Changed is signalled (without blocking, coalesced) after every change.
func (o *Output) Changed() <-chan struct{} { return o.changed }

// Synced reports whether MarkSynced was called.
func (o *Output) Synced() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.synced
}

// State returns a copy of the current state.
func (o *Output) State() map[node.Key]cty.Value {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.state)
}

// Held implements node.Holder; values are as the Output keeps them,
// built.
func (o *Output) Held(k node.Key) (node.Record, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	v, ok := o.state[k]
	return node.Record{Key: k, Value: v}, ok
}

// HeldRecords implements node.Holder.
func (o *Output) HeldRecords() []node.Record {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]node.Record, 0, len(o.state))
	for k, v := range o.state {
		out = append(out, node.Record{Key: k, Value: v})
	}
	return out
}

// Keys returns the sorted keys of the current state.
func (o *Output) Keys() []node.Key {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := slices.AppendSeq(make([]node.Key, 0, len(o.state)), maps.Keys(o.state))
	slices.Sort(out)
	return out
}

// Batches returns the batches applied so far.
func (o *Output) Batches() [][]node.Delta {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([][]node.Delta(nil), o.batches...)
}

// Input is a node.Input fed by the test through Send.
type Input struct {
	ch chan node.Event
}

// NewInput returns an Input with a buffer of n events.
func NewInput(n int) *Input { return &Input{ch: make(chan node.Event, n)} }

var _ node.Input = (*Input)(nil)

// Send queues an event; it blocks when the buffer is full.
func (i *Input) Send(e node.Event) { i.ch <- e }

// Next implements node.Input.
func (i *Input) Next(ctx context.Context) (node.Event, error) {
	select {
	case e := <-i.ch:
		return e, nil
	case <-ctx.Done():
		return node.Event{}, ctx.Err()
	}
}
