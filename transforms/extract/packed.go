package extract

import (
	"slices"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
)

// maxShapes bounds the shapes one transform keeps: a value whose object
// type is not among them stays a cty value. A value expression yields one
// or a few types in practice.
const maxShapes = 8

// packer keeps the record values extract yields packed (node.PackedVal):
// an object as its attributes' values in the order of a shape shared by
// every value of its type, without the type map and attribute map a cty
// object carries (`{pod, namespace}` costs about 770 bytes as a cty object
// and about 80 packed, its strings shared with the input object). The
// value is built only when a consumer that reads it receives it; debounce
// and grace_period pass it on packed. A packer belongs to one goroutine.
type packer struct{ shapes []*shape }

// shape is the layout of one object type: its attribute names, sorted.
// Every attribute of a strings shape is a string, and its values are kept
// as Go strings (16 bytes each, where a cty.Value takes 32 and a box).
type shape struct {
	ty      cty.Type
	names   []string
	strings bool
}

// one indexes a shape's value in the list build makes.
var one = cty.NumberIntVal(1)

// build returns the object of sh's type with attrs. cty.ObjectVal gives
// every object a type of its own (a map of attribute types, about half of
// a small object's bytes, kept as long as the value); an element of a
// list has the list's element type, so the value taken out of a list
// behind a null of the shape's type shares the shape's one type.
func (sh *shape) build(attrs map[string]cty.Value) cty.Value {
	return cty.ListVal([]cty.Value{cty.NullVal(sh.ty), cty.ObjectVal(attrs)}).Index(one)
}

// pack returns v packed, or v itself when packing would not pay: not an
// object, an empty one, one with marks (sensitive values keep their cty
// form, where every check looks for them), or of a type beyond maxShapes.
func (pk *packer) pack(v cty.Value) cty.Value {
	ty := v.Type()
	if !ty.IsObjectType() || v.IsNull() || len(ty.AttributeTypes()) == 0 || v.ContainsMarked() {
		return v
	}
	strs := true
	for it := v.ElementIterator(); it.Next(); {
		_, a := it.Element()
		strs = strs && a.Type() == cty.String && !a.IsNull()
	}
	sh := pk.shape(ty, strs)
	if sh == nil {
		return v
	}
	if sh.strings {
		p := &packedStrings{sh: sh, s: make([]string, len(sh.names))}
		for i, n := range sh.names {
			p.s[i] = v.GetAttr(n).AsString()
		}
		return node.PackedVal(p)
	}
	p := &packedValues{sh: sh, v: make([]cty.Value, len(sh.names))}
	for i, n := range sh.names {
		p.v[i] = v.GetAttr(n)
	}
	return node.PackedVal(p)
}

// shape returns the shape of ty, made on first use; nil when maxShapes
// are taken.
func (pk *packer) shape(ty cty.Type, strs bool) *shape {
	for _, sh := range pk.shapes {
		if sh.strings == strs && sh.ty.Equals(ty) {
			return sh
		}
	}
	if len(pk.shapes) == maxShapes {
		return nil
	}
	sh := &shape{ty: ty, strings: strs}
	for n := range ty.AttributeTypes() {
		sh.names = append(sh.names, n)
	}
	slices.Sort(sh.names)
	pk.shapes = append(pk.shapes, sh)
	return sh
}

// packedStrings is an object of a strings shape (node.Packed).
type packedStrings struct {
	sh *shape
	s  []string
}

// Value implements node.Packed.
func (p *packedStrings) Value() cty.Value {
	attrs := make(map[string]cty.Value, len(p.s))
	for i, n := range p.sh.names {
		attrs[n] = cty.StringVal(p.s[i])
	}
	return p.sh.build(attrs)
}

// Same implements node.Packed: one shape, equal strings.
func (p *packedStrings) Same(o node.Packed) bool {
	q, ok := o.(*packedStrings)
	return ok && q.sh == p.sh && slices.Equal(p.s, q.s)
}

// packedValues is an object of any other shape (node.Packed).
type packedValues struct {
	sh *shape
	v  []cty.Value
}

// Value implements node.Packed.
func (p *packedValues) Value() cty.Value {
	attrs := make(map[string]cty.Value, len(p.v))
	for i, n := range p.sh.names {
		attrs[n] = p.v[i]
	}
	return p.sh.build(attrs)
}

// Same implements node.Packed: one shape, equal values.
func (p *packedValues) Same(o node.Packed) bool {
	q, ok := o.(*packedValues)
	return ok && q.sh == p.sh && slices.EqualFunc(p.v, q.v, cty.Value.RawEquals)
}

var (
	_ node.Packed = (*packedStrings)(nil)
	_ node.Packed = (*packedValues)(nil)
)
