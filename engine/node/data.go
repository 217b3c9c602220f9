package node

import (
	"reflect"
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
	// Origin is where the record came from, shared by reference; nil
	// keeps what the receiving collection knows (see Origin).
	Origin *Origin
}

// Origin is a record's provenance: the source that emitted it and the
// object or declaration it comes from. A source makes one per object
// version and every stage passes the pointer on, so provenance costs a
// pointer per record and stage, never a copy. The path a record took from
// Source to a sink is the graph's (see `pipeline explain`).
type Origin struct {
	// Source is the address of the source that emitted the record.
	Source string
	// Namespace, Name, UID and ResourceVersion identify the object a
	// watching source (kubernetes) decoded it from.
	Namespace, Name, UID, ResourceVersion string
	// File and Line locate a record declared in configuration (static) or
	// read from a file (files); Line is 0 when unknown.
	File string
	Line int
	// Object is the source's key of the object or entry (namespace/name,
	// a NATS KV key) when it differs from the record's key.
	Object string
}

// Delta is an upsert or a delete of one key.
type Delta struct {
	Key    Key
	Value  cty.Value // cty.NilVal for a delete
	Delete bool
	// Time is when the change entered the pipeline at its source; it feeds
	// the change-latency histogram. Transforms carry it forward.
	Time time.Time
	// Origin is the upserted record's provenance (see Record.Origin).
	Origin *Origin
}

// Packed is the compact form of a record value that a producer may hand
// to its output instead of the value, wrapped by PackedVal (the kubernetes
// source does, for projected objects: the read fields' values in a fixed
// order, without the type and attribute maps a cty object carries at every
// level). The output keeps the packed form at rest and every consumer
// receives the built value (Unpack), so the many records a source holds
// cost their fields, not their cty structure. A packed value is immutable.
type Packed interface {
	// Value builds the cty value; every call returns an equal value.
	Value() cty.Value
	// Same reports whether o is an equal value. It may say false for an
	// equal value it cannot compare cheaply (another kind of packed
	// form): the output then takes the value as changed and passes it on,
	// which is safe, only not minimal.
	Same(o Packed) bool
}

// packedType is the cty capsule type of PackedVal: a record value stays a
// cty.Value from source to sink, and only an output ever sees one packed.
var packedType = cty.CapsuleWithOps("packed value", reflect.TypeFor[Packed](), &cty.CapsuleOps{
	RawEquals: func(a, b any) bool { return (*a.(*Packed)).Same(*b.(*Packed)) },
})

// PackedVal returns a record value carrying p, for Record.Value or
// Delta.Value. An output keeps it so and hands its consumers the built
// value (Unpack).
func PackedVal(p Packed) cty.Value { return cty.CapsuleVal(packedType, &p) }

// IsPacked reports whether v carries a packed form (PackedVal).
func IsPacked(v cty.Value) bool { return v.Type() == packedType }

// Unpack returns v, built from its packed form if it carries one.
func Unpack(v cty.Value) cty.Value {
	if IsPacked(v) {
		return (*v.EncapsulatedValue().(*Packed)).Value()
	}
	return v
}

// Compact returns v as an output keeps it at rest, in the 16 bytes of an
// interface where a cty.Value takes 32: a packed value's Packed pointer,
// which costs nothing more, else v (boxed). Expand is its inverse.
func Compact(v cty.Value) any {
	if IsPacked(v) {
		return v.EncapsulatedValue()
	}
	return v
}

// Expand returns the value Compact was given.
func Expand(a any) cty.Value {
	if p, ok := a.(*Packed); ok {
		return cty.CapsuleVal(packedType, p)
	}
	v, _ := a.(cty.Value)
	return v
}

// PackedInput is implemented by a transform that takes its input's
// values as their producer emitted them, packed or not (PackedVal), and
// builds a packed one (Unpack) only where it reads it: debounce and
// grace_period pass values on unread, extract builds one object at a time
// as it evaluates it. So a packed record stays packed on its way, and a
// large snapshot is never built whole. Such a transform compares values
// only with RawEquals, which compares two packed values by Packed.Same.
// A sink's target may implement it too: its Prepare passes the record's
// value on unread, and the sink loop keeps it packed and builds it where
// it writes, shows or compares an entry (a log keeps no built value).
type PackedInput interface{ TakesPacked() }

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
