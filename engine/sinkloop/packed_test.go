package sinkloop

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
)

// countedPacked is a packed string that counts how often it is built.
type countedPacked struct {
	s      string
	builds *atomic.Int32
}

func (p countedPacked) Value() cty.Value        { p.builds.Add(1); return cty.StringVal(p.s) }
func (p countedPacked) Same(o node.Packed) bool { q, ok := o.(countedPacked); return ok && q.s == p.s }

// passTarget passes record values on unread (node.PackedInput), as the
// log sink does, and records the values it is handed to write.
type passTarget struct {
	mu     sync.Mutex
	wrote  []cty.Value
	packed bool // a value handed to Update was packed
}

func (*passTarget) TakesPacked() {}
func (*passTarget) Prepare(r node.Record) (node.Entry, error) {
	return node.Entry{Key: r.Key, Value: r.Value}, nil
}
func (*passTarget) Actual(context.Context) ([]node.Entry, error) { return nil, node.ErrNoActualState }
func (t *passTarget) Update(_ context.Context, batch []node.Entry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range batch {
		t.wrote = append(t.wrote, e.Value)
		t.packed = t.packed || node.IsPacked(e.Value)
	}
}
func (*passTarget) Delete(context.Context, []node.Entry) {}
func (*passTarget) Close() error                         { return nil }

// TestPackedValues: a target that passes values on keeps them packed: the
// loop builds a value only to write it (the target sees no packed value),
// and an equal packed value, compared unbuilt, writes nothing.
func TestPackedValues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var builds atomic.Int32
		val := func(s string) cty.Value { return node.PackedVal(countedPacked{s, &builds}) }
		target := &passTarget{}
		l := New(nopConfig(Config{Address: "sink.pass.p"}))
		in := &feed{ready: make(chan struct{}, 1)}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = l.Run(ctx, target, in); close(done) }()
		defer func() { cancel(); <-done }()
		var recs []node.Record
		for i := range 10 {
			recs = append(recs, node.Record{Key: fmt.Sprint("k", i), Value: val("a")})
		}
		in.send(node.Event{Reset: true, Snapshot: recs, Synced: true})
		synctest.Wait()
		check := func(what string, writes, built int) {
			t.Helper()
			target.mu.Lock()
			defer target.mu.Unlock()
			if len(target.wrote) != writes || int(builds.Load()) != built || target.packed {
				t.Fatalf("%s: %d writes, %d values built, a packed value written: %v; want %d, %d, false",
					what, len(target.wrote), builds.Load(), target.packed, writes, built)
			}
		}
		check("the first sync", 10, 10)
		in.send(node.Event{Deltas: []node.Delta{node.Upsert("k0", val("a"), time.Time{})}, Synced: true})
		synctest.Wait()
		check("an equal value", 10, 10)
		in.send(node.Event{Deltas: []node.Delta{node.Upsert("k1", val("b"), time.Time{})}, Synced: true})
		synctest.Wait()
		check("a changed value", 11, 11)
		if got := target.wrote[10]; !got.RawEquals(cty.StringVal("b")) {
			t.Fatalf("wrote %#v, want \"b\"", got)
		}
	})
}
