package extract

import (
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
)

// owners are the objects yielding one record key and the value each of
// them yields. The record's value is the one of the smallest object key,
// kept apart so that reading it costs nothing and the common case (one
// object per record) allocates no map.
type owners struct {
	has    bool // min and val are set
	min    node.Key
	val    cty.Value
	org    *node.Origin       // min's provenance, shared with the input record
	others map[node.Key]owned // every owner but min; nil when none
}

// owned is what one object yields for a record, with its provenance.
type owned struct {
	val cty.Value
	org *node.Origin
}

// put sets what object obj yields for this record.
func (o *owners) put(obj node.Key, v cty.Value, org *node.Origin) {
	switch {
	case !o.has || obj == o.min:
		o.has, o.min, o.val, o.org = true, obj, v, org
	case obj < o.min:
		if o.others == nil {
			o.others = map[node.Key]owned{}
		}
		o.others[o.min] = owned{o.val, o.org}
		delete(o.others, obj)
		o.min, o.val, o.org = obj, v, org
	default:
		if o.others == nil {
			o.others = map[node.Key]owned{}
		}
		o.others[obj] = owned{v, org}
	}
}

// remove forgets obj; it reports whether any owner is left. Removing the
// smallest owner scans the others for the next one, which is linear only
// in the number of objects sharing this record key.
func (o *owners) remove(obj node.Key) bool {
	if obj != o.min {
		delete(o.others, obj)
		return true
	}
	if len(o.others) == 0 {
		*o = owners{}
		return false
	}
	first := true
	for k := range o.others {
		if first || k < o.min {
			o.min, first = k, false
		}
	}
	o.val, o.org = o.others[o.min].val, o.others[o.min].org
	delete(o.others, o.min)
	if len(o.others) == 0 {
		o.others = nil
	}
	return true
}

// index maps input objects to the record keys they yield, and record keys
// to their owners.
type index struct {
	byObject map[node.Key][]node.Key
	byRecord map[node.Key]owners
}

// newIndex returns an empty index sized for about n objects.
func newIndex(n int) *index {
	return &index{byObject: make(map[node.Key][]node.Key, n), byRecord: make(map[node.Key]owners, n)}
}

// value returns a record's current value.
func (x *index) value(rk node.Key) (cty.Value, bool) {
	o, ok := x.byRecord[rk]
	return o.val, ok
}

// origin returns the provenance of a record's current value.
func (x *index) origin(rk node.Key) *node.Origin { return x.byRecord[rk].org }

// set replaces what object obj yields with ys (unique keys). touch is
// called with every record key whose owners change, before the change.
func (x *index) set(obj node.Key, ys []yield, org *node.Origin, touch func(node.Key)) {
	x.drop(obj, touch)
	if len(ys) == 0 {
		return
	}
	keys := make([]node.Key, len(ys))
	for i, y := range ys {
		keys[i] = y.key
		touch(y.key)
		o := x.byRecord[y.key]
		o.put(obj, y.value, org)
		x.byRecord[y.key] = o
	}
	x.byObject[obj] = keys
}

// drop forgets every record obj yields.
func (x *index) drop(obj node.Key, touch func(node.Key)) {
	for _, rk := range x.byObject[obj] {
		touch(rk)
		o := x.byRecord[rk]
		if o.remove(obj) {
			x.byRecord[rk] = o
		} else {
			delete(x.byRecord, rk)
		}
	}
	delete(x.byObject, obj)
}

// records returns every record.
func (x *index) records() []node.Record {
	out := make([]node.Record, 0, len(x.byRecord))
	for rk, o := range x.byRecord {
		out = append(out, node.Record{Key: rk, Value: o.val, Origin: o.org})
	}
	return out
}
