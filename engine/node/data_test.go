package node

import (
	"testing"

	"github.com/zclconf/go-cty/cty"
)

type strPacked string

func (p strPacked) Value() cty.Value   { return cty.StringVal(string(p)) }
func (p strPacked) Same(o Packed) bool { return p == o }

// TestCompactRoundTrip: a value kept compact comes back equal, a packed
// one still packed and without an allocation either way.
func TestCompactRoundTrip(t *testing.T) {
	packed := PackedVal(strPacked("a"))
	for _, v := range []cty.Value{packed, cty.StringVal("b")} {
		if got := Expand(Compact(v)); !got.RawEquals(v) {
			t.Errorf("Expand(Compact(%#v)) = %#v", v, got)
		}
	}
	if got := Expand(nil); got.Type() != cty.NilType {
		t.Errorf("Expand(nil) = %#v, want cty.NilVal", got)
	}
	if got := Expand(Compact(packed)); !IsPacked(got) || Unpack(got).AsString() != "a" {
		t.Errorf("a packed value came back as %#v", got)
	}
	c := Compact(packed)
	if n := testing.AllocsPerRun(100, func() { c = Compact(Expand(c)) }); n != 0 {
		t.Errorf("a packed value allocated %v times on its way", n)
	}
}
