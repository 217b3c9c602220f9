package extract

import (
	"fmt"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// A packed value builds exactly the value packed, and two packed values
// are Same exactly when their values are equal.
func TestPackRoundTrip(t *testing.T) {
	obj := func(attrs map[string]cty.Value) cty.Value { return cty.ObjectVal(attrs) }
	for name, v := range map[string]cty.Value{
		"strings":      obj(map[string]cty.Value{"pod": cty.StringVal("web-1"), "namespace": cty.StringVal("shop")}),
		"one string":   obj(map[string]cty.Value{"pod": cty.StringVal("web-1")}),
		"empty string": obj(map[string]cty.Value{"pod": cty.StringVal("")}),
		"null string":  obj(map[string]cty.Value{"pod": cty.NullVal(cty.String), "namespace": cty.StringVal("shop")}),
		"mixed":        obj(map[string]cty.Value{"pod": cty.StringVal("web-1"), "port": cty.NumberIntVal(8080), "up": cty.True}),
		"untyped null": obj(map[string]cty.Value{"x": cty.NullVal(cty.DynamicPseudoType), "pod": cty.StringVal("web-1")}),
		"nested":       obj(map[string]cty.Value{"meta": obj(map[string]cty.Value{"a": cty.StringVal("b")}), "l": cty.ListVal([]cty.Value{cty.StringVal("x")})}),
	} {
		t.Run(name, func(t *testing.T) {
			var pk packer
			p := pk.pack(v)
			if !node.IsPacked(p) {
				t.Fatalf("not packed: %#v", v)
			}
			if got := node.Unpack(p); !got.RawEquals(v) {
				t.Errorf("built %#v, want %#v", got, v)
			}
			if q := pk.pack(v); !p.RawEquals(q) {
				t.Error("two packings of one value are not Same")
			}
		})
	}
}

func TestPackSame(t *testing.T) {
	var pk packer
	val := func(pod, ns string) cty.Value {
		return pk.pack(cty.ObjectVal(map[string]cty.Value{"pod": cty.StringVal(pod), "namespace": cty.StringVal(ns)}))
	}
	if !val("a", "b").RawEquals(val("a", "b")) {
		t.Error("equal values differ")
	}
	if val("a", "b").RawEquals(val("a", "c")) || val("a", "b").RawEquals(val("b", "b")) {
		t.Error("different values are Same")
	}
	other := pk.pack(cty.ObjectVal(map[string]cty.Value{"pod": cty.StringVal("a"), "ns": cty.StringVal("b")}))
	if val("a", "b").RawEquals(other) {
		t.Error("values of two shapes are Same")
	}
	mixed := func(n int64) cty.Value {
		return pk.pack(cty.ObjectVal(map[string]cty.Value{"pod": cty.StringVal("a"), "n": cty.NumberIntVal(n)}))
	}
	if !mixed(1).RawEquals(mixed(1)) || mixed(1).RawEquals(mixed(2)) {
		t.Error("values of a mixed shape compare wrong")
	}
}

// Values that packing would not pay for, or that every check must see as
// cty values (sensitive ones), stay as they are.
func TestPackLeaves(t *testing.T) {
	var pk packer
	for name, v := range map[string]cty.Value{
		"string":    cty.StringVal("a"),
		"empty":     cty.EmptyObjectVal,
		"null":      cty.NullVal(cty.Object(map[string]cty.Type{"a": cty.String})),
		"map":       cty.MapVal(map[string]cty.Value{"a": cty.StringVal("b")}),
		"sensitive": cty.ObjectVal(map[string]cty.Value{"token": schema.MarkSensitive(cty.StringVal("s"))}),
	} {
		if p := pk.pack(v); node.IsPacked(p) {
			t.Errorf("%s: packed", name)
		}
	}
	for i := range maxShapes + 2 {
		v := cty.ObjectVal(map[string]cty.Value{fmt.Sprint("a", i): cty.StringVal("x")})
		if p := pk.pack(v); node.IsPacked(p) != (i < maxShapes) {
			t.Errorf("shape %d: packed %v", i, node.IsPacked(p))
		}
	}
}
