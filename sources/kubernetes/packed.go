package kubernetes

import (
	"fmt"
	"slices"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/ctyconv"
)

// shape numbers the fields a projection reads, level by level, so that a
// projected object's record value can be kept as one slice of its read
// fields' values (packed) and built into a cty object only when a
// consumer receives it. A cty object carries a type map and an attribute
// map at every level: for `{status = {podIP}}` that is four maps per pod,
// where the packed form holds one string (docs/performance.md).
type shape struct {
	fields []shapeField // sorted by name
	slots  int          // slots of the whole tree (the root's count)
	// nsSlot and nameSlot are the slots of metadata.namespace and
	// metadata.name when they are read whole, else -1: the object's
	// identity holds the same strings (object.go).
	nsSlot, nameSlot int
}

// shapeField is one read field of a level: its slot, and what is read
// below it (nil: the field is read whole and its slot holds its value).
type shapeField struct {
	name  string
	slot  int
	below *shape
}

// newShape numbers the fields reads covers, which must not be whole.
func newShape(reads *node.Paths) *shape {
	sh := &shape{nsSlot: -1, nameSlot: -1}
	sh.slots = sh.number(reads, 0)
	for _, f := range sh.fields {
		if f.name != "metadata" || f.below == nil {
			continue
		}
		for _, g := range f.below.fields {
			switch {
			case g.below != nil:
			case g.name == "namespace":
				sh.nsSlot = g.slot
			case g.name == "name":
				sh.nameSlot = g.slot
			}
		}
	}
	return sh
}

func (sh *shape) number(reads *node.Paths, next int) int {
	for _, f := range reads.Fields() {
		below, _ := reads.Field(f)
		sf := shapeField{name: f, slot: next}
		next++
		if !below.Whole() {
			sf.below = &shape{}
			next = sf.below.number(below, next)
		}
		sh.fields = append(sh.fields, sf)
	}
	return next
}

// A slot holds nil (the field is absent), present (a read object, whose
// read fields are in the slots after it), a string (the common leaf, kept
// as the Go string: half the bytes of a cty.Value) or a cty.Value. A field
// read below can only hold an object when the source found a map there; a
// field that holds something else (a string where an object was expected)
// is converted whole, as it is.
type presence struct{}

var present any = presence{}

// fill converts the fields of obj that sh covers into slots.
func (sh *shape) fill(obj map[string]any, slots []any) error {
	for _, f := range sh.fields {
		v, ok := obj[f.name]
		if !ok {
			continue // absent: the slot stays nil
		}
		m, isMap := v.(map[string]any)
		if ms, ok := v.(map[string]string); ok {
			m, isMap = make(map[string]any, len(ms)), true
			for k, s := range ms {
				m[k] = s
			}
		}
		if isMap && f.below != nil {
			slots[f.slot] = present
			if err := f.below.fill(m, slots); err != nil {
				return err
			}
			continue
		}
		if _, ok := v.(string); ok {
			slots[f.slot] = v // the decoder's own box
			continue
		}
		cv, err := ctyconv.ToCty(v)
		if err != nil {
			return fmt.Errorf("convert object: %w", err)
		}
		if cv.Type().IsObjectType() && f.below != nil {
			// ToCty makes objects of maps only, handled above.
			return fmt.Errorf("convert object: field %s is an object of type %T", f.name, v)
		}
		slots[f.slot] = cv
	}
	return nil
}

// build makes the cty object of one level from the slots.
func (sh *shape) build(slots []any) cty.Value {
	attrs := make(map[string]cty.Value, len(sh.fields))
	for _, f := range sh.fields {
		switch v := slots[f.slot].(type) {
		case nil: // absent
		case presence:
			attrs[f.name] = f.below.build(slots)
		case string:
			attrs[f.name] = cty.StringVal(v)
		case cty.Value:
			attrs[f.name] = v
		}
	}
	return cty.ObjectVal(attrs)
}

// packed is a projected object's record value in compact form: its read
// fields' values in the slots of its source's shape (node.Packed).
type packed struct {
	sh    *shape
	slots []any
}

// Value implements node.Packed.
func (p *packed) Value() cty.Value { return p.sh.build(p.slots) }

// Field returns the value at path as the built value has it, reading the
// slots without building the levels above it, so that extract evaluates
// `object.status.podIP` without making the pod's cty object
// (fastexpr.Fields). ok is false for an absent field and for a path that
// goes below a slot holding a cty value.
func (p *packed) Field(path []string) (cty.Value, bool) {
	sh := p.sh
	for i, name := range path {
		j, found := slices.BinarySearchFunc(sh.fields, name, func(f shapeField, n string) int { return strings.Compare(f.name, n) })
		if !found {
			return cty.NilVal, false
		}
		f, last := sh.fields[j], i == len(path)-1
		switch v := p.slots[f.slot].(type) {
		case presence:
			if last {
				return f.below.build(p.slots), true
			}
			sh = f.below
		case string:
			return cty.StringVal(v), last
		case cty.Value:
			return v, last
		default: // absent
			return cty.NilVal, false
		}
	}
	return cty.NilVal, false
}

// Same reports whether q holds an equal value: two packed values of one
// shape are equal when every slot is.
func (p *packed) Same(q *packed) bool {
	if q.sh != p.sh || len(q.slots) != len(p.slots) {
		return false
	}
	for i, v := range p.slots {
		switch v := v.(type) {
		case cty.Value:
			w, ok := q.slots[i].(cty.Value)
			if !ok || !v.RawEquals(w) {
				return false
			}
		default: // nil, present, a string
			if v != q.slots[i] {
				return false
			}
		}
	}
	return true
}
