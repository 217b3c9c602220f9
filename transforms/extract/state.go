package extract

import (
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
)

// owners is what the index keeps of the objects yielding one record key:
// the smallest object key and what it yields, which is the record's
// value. Every other owner's yield is kept apart, in index.others, so
// that the common case (one object per record) costs this struct alone.
type owners struct {
	min node.Key
	val any          // min's value (node.Compact); nil when the record has no owner
	org *node.Origin // min's provenance, shared with the input record
}

// owned is what one object yields for a record, with its provenance.
type owned struct {
	val cty.Value
	org *node.Origin
}

// index maps input objects to the record keys they yield, and record keys
// to their owners.
type index struct {
	byObject map[node.Key]node.Key   // the first record key an object yields, unless only its own (yieldsOwn)
	more     map[node.Key][]node.Key // the others, for an object yielding more than one
	byRecord map[node.Key]owners
	// others holds, for a record key yielded by more than one object,
	// every owner but the smallest.
	others map[node.Key]map[node.Key]owned
}

// newIndex returns an empty index sized for about n records (byObject
// grows as needed: objects keyed as their record take no slot in it).
func newIndex(n int) *index {
	return &index{byObject: map[node.Key]node.Key{}, more: map[node.Key][]node.Key{},
		byRecord: make(map[node.Key]owners, n), others: map[node.Key]map[node.Key]owned{}}
}

// put sets what object obj yields for record key rk.
func (x *index) put(rk, obj node.Key, v cty.Value, org *node.Origin) {
	o := x.byRecord[rk]
	switch {
	case o.val == nil || obj == o.min: // no owner yet, or obj
		o = owners{obj, node.Compact(v), org}
	case obj < o.min:
		x.other(rk)[o.min] = owned{node.Expand(o.val), o.org}
		delete(x.others[rk], obj)
		o = owners{obj, node.Compact(v), org}
	default:
		x.other(rk)[obj] = owned{v, org}
	}
	x.byRecord[rk] = o
}

// other returns rk's other owners, making the map on first use.
func (x *index) other(rk node.Key) map[node.Key]owned {
	m := x.others[rk]
	if m == nil {
		m = map[node.Key]owned{}
		x.others[rk] = m
	}
	return m
}

// remove forgets obj as an owner of rk. Removing the smallest owner scans
// the others for the next one, which is linear only in the number of
// objects sharing this record key.
func (x *index) remove(rk, obj node.Key) {
	o, m := x.byRecord[rk], x.others[rk]
	if obj != o.min {
		delete(m, obj)
	} else if len(m) == 0 {
		delete(x.byRecord, rk)
	} else {
		first := true
		for k := range m {
			if first || k < o.min {
				o.min, first = k, false
			}
		}
		o.val, o.org = node.Compact(m[o.min].val), m[o.min].org
		delete(m, o.min)
		x.byRecord[rk] = o
	}
	if m != nil && len(m) == 0 {
		delete(x.others, rk)
	}
}

// value returns a record's current value.
func (x *index) value(rk node.Key) (cty.Value, bool) {
	o, ok := x.byRecord[rk]
	return node.Expand(o.val), ok
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
	for _, y := range ys {
		touch(y.key)
		x.put(y.key, obj, y.value, org)
	}
	if len(ys) == 1 && ys[0].key == obj {
		return // yieldsOwn finds it: an object keyed as its record costs no slot here
	}
	x.byObject[obj] = ys[0].key
	if len(ys) > 1 {
		more := make([]node.Key, len(ys)-1)
		for i, y := range ys[1:] {
			more[i] = y.key
		}
		x.more[obj] = more
	}
}

// drop forgets every record obj yields.
func (x *index) drop(obj node.Key, touch func(node.Key)) {
	first, ok := x.byObject[obj]
	if !ok && !x.yieldsOwn(obj) {
		return
	}
	if !ok {
		first = obj
	}
	touch(first)
	x.remove(first, obj)
	for _, rk := range x.more[obj] {
		touch(rk)
		x.remove(rk, obj)
	}
	delete(x.byObject, obj)
	delete(x.more, obj)
}

// yieldsOwn reports whether obj is an owner of the record keyed as obj
// itself; set leaves such an object out of byObject when that is all it
// yields.
func (x *index) yieldsOwn(obj node.Key) bool {
	if o, ok := x.byRecord[obj]; ok && o.min == obj {
		return true
	}
	_, ok := x.others[obj][obj]
	return ok
}

// records returns every record.
func (x *index) records() []node.Record {
	out := make([]node.Record, 0, len(x.byRecord))
	for rk, o := range x.byRecord {
		out = append(out, node.Record{Key: rk, Value: node.Expand(o.val), Origin: o.org})
	}
	return out
}
