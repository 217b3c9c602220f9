package engine

import (
	"context"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
)

// testPacked is a packed value that counts how often it is built.
type testPacked struct {
	s      string
	builds *int
}

func (p testPacked) Value() cty.Value {
	*p.builds++
	return cty.ObjectVal(map[string]cty.Value{"ip": cty.StringVal(p.s)})
}

func (p testPacked) Same(o node.Packed) bool {
	q, ok := o.(testPacked)
	return ok && q.s == p.s
}

// TestCollectionKeepsPackedValues checks that a collection keeps what a
// producer hands over packed in that form, compares packed forms without
// building values, and that consumers always receive built values.
func TestCollectionKeepsPackedValues(t *testing.T) {
	builds := 0
	pk := func(s string) cty.Value { return node.PackedVal(testPacked{s, &builds}) }
	val := func(s string) cty.Value { return testPacked{s, new(int)}.Value() }
	c := newCollection(0, nil)
	sub := c.subscribe(nil)
	ctx := context.Background()
	if ev, err := sub.Next(ctx); err != nil || !ev.Reset || len(ev.Snapshot) != 0 {
		t.Fatalf("first event %+v, %v: want an empty reset", ev, err)
	}

	c.Replace([]node.Record{{Key: "a", Value: pk("1")}, {Key: "b", Value: val("2")}})
	if builds != 0 {
		t.Fatalf("storing packed records built %d values", builds)
	}
	if sl := c.state["a"]; !node.IsPacked(node.Expand(sl.v)) {
		t.Fatalf("slot a = %+v: want the packed form only", sl)
	}
	ev, err := sub.Next(ctx)
	if err != nil || len(ev.Deltas) != 2 {
		t.Fatalf("event %+v, %v: want two deltas", ev, err)
	}
	for _, d := range ev.Deltas {
		if node.IsPacked(d.Value) || d.Value.Type() == cty.NilType {
			t.Fatalf("consumer received %+v: want a built value and no packed form", d)
		}
	}
	if want := val("1"); !ev.Deltas[0].Value.RawEquals(want) && !ev.Deltas[1].Value.RawEquals(want) {
		t.Fatalf("deltas %+v hold no %#v", ev.Deltas, want)
	}

	// An equal packed value, and a built value equal to a packed one,
	// change nothing; a different packed value does.
	builds = 0
	c.Apply([]node.Delta{{Key: "a", Value: pk("1")}})
	if builds != 0 {
		t.Fatalf("comparing two packed values built %d values", builds)
	}
	c.Apply([]node.Delta{{Key: "a", Value: val("1")}, {Key: "b", Value: pk("2")}})
	c.Apply([]node.Delta{{Key: "a", Value: pk("3")}})
	ev, err = sub.Next(ctx)
	if err != nil || len(ev.Deltas) != 1 || ev.Deltas[0].Key != "a" || !ev.Deltas[0].Value.RawEquals(val("3")) {
		t.Fatalf("event %+v, %v: want only a = 3", ev, err)
	}

	if r, ok := c.lookup("a"); !ok || !r.Value.RawEquals(val("3")) || node.IsPacked(r.Value) {
		t.Fatalf("lookup a = %+v, %v", r, ok)
	}
	snap, _, _ := c.snapshot()
	for _, r := range snap {
		if node.IsPacked(r.Value) || r.Value.Type() == cty.NilType {
			t.Fatalf("snapshot record %+v: want a built value", r)
		}
	}
}

// A subscription of a node.PackedInput hands values on as the producer
// emitted them, packed or not, in resets and deltas alike.
func TestPasserReceivesPackedValues(t *testing.T) {
	builds := 0
	pk := func(s string) cty.Value { return node.PackedVal(testPacked{s, &builds}) }
	c := newCollection(0, nil)
	c.Replace([]node.Record{{Key: "a", Value: pk("1")}})
	sub := c.subscribe(nil)
	sub.packed = true
	ctx := context.Background()
	ev, err := sub.Next(ctx)
	if err != nil || !ev.Reset || len(ev.Snapshot) != 1 || !node.IsPacked(ev.Snapshot[0].Value) {
		t.Fatalf("first event %+v, %v: want a reset holding a packed a", ev, err)
	}
	c.Apply([]node.Delta{{Key: "b", Value: pk("2")}})
	ev, err = sub.Next(ctx)
	if err != nil || len(ev.Deltas) != 1 || !node.IsPacked(ev.Deltas[0].Value) {
		t.Fatalf("event %+v, %v: want a packed b", ev, err)
	}
	if builds != 0 {
		t.Fatalf("handing packed values to a passer built %d values", builds)
	}
}
