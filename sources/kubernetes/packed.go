package kubernetes

import (
	"fmt"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/ctyconv"
)

// shape numbers the fields a projection reads, level by level, so that a
// projected object's record value can be kept as one slice of its read
// fields' values (packed) and built into a cty object only when a
// consumer receives it. A cty object carries a type map and an attribute
// map at every level: for `{status = {podIP}}` that is four maps, about
// 1.4 KB per pod, where the packed form holds one string.
type shape struct {
	fields []shapeField // sorted by name
	slots  int          // slots of the whole tree (the root's count)
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
	sh := &shape{}
	sh.slots = sh.number(reads, 0)
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

// present marks the slot of a read object that holds its read fields in
// the slots after it. A field read below can only hold an object when
// the source found a map there; a field that holds something else (a
// string where an object was expected) is converted whole, as it is.
var present = cty.EmptyObjectVal

// pack converts the fields of obj that sh covers into a packed value.
func (sh *shape) pack(obj map[string]any) (*packed, error) {
	p := &packed{sh: sh, slots: make([]cty.Value, sh.slots)}
	return p, sh.fill(obj, p.slots)
}

func (sh *shape) fill(obj map[string]any, slots []cty.Value) error {
	for _, f := range sh.fields {
		v, ok := obj[f.name]
		if !ok {
			continue // absent: the slot stays cty.NilVal
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
		cv, err := ctyconv.ToCty(v)
		if err != nil {
			return fmt.Errorf("convert object: %w", err)
		}
		if cv.Type().IsObjectType() && f.below != nil {
			// ToCty makes objects of maps only, handled above; an object
			// here could not be told from present.
			return fmt.Errorf("convert object: field %s is an object of type %T", f.name, v)
		}
		slots[f.slot] = cv
	}
	return nil
}

// build makes the cty object of one level from the slots.
func (sh *shape) build(slots []cty.Value) cty.Value {
	attrs := make(map[string]cty.Value, len(sh.fields))
	for _, f := range sh.fields {
		v := slots[f.slot]
		switch {
		case v.Type() == cty.NilType: // absent
		case f.below != nil && v.Type().IsObjectType():
			attrs[f.name] = f.below.build(slots)
		default:
			attrs[f.name] = v
		}
	}
	return cty.ObjectVal(attrs)
}

// packed is a projected object's record value in compact form: its read
// fields' values in the slots of its source's shape (node.Packed).
type packed struct {
	sh    *shape
	slots []cty.Value
}

// Value implements node.Packed.
func (p *packed) Value() cty.Value { return p.sh.build(p.slots) }

// Same reports whether q holds an equal value: two packed values of one
// shape are equal when every slot is.
func (p *packed) Same(q *packed) bool {
	if q.sh != p.sh || len(q.slots) != len(p.slots) {
		return false
	}
	if q == p {
		return true
	}
	for i, v := range p.slots {
		w := q.slots[i]
		if (v.Type() == cty.NilType) != (w.Type() == cty.NilType) {
			return false
		}
		if v.Type() != cty.NilType && !v.RawEquals(w) {
			return false
		}
	}
	return true
}
