package graph

import (
	"bytes"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// TestAppendJSONSameAsCty: the fast encoder of fingerprints writes what
// cty/json writes, byte for byte, or leaves the value to it.
func TestAppendJSONSameAsCty(t *testing.T) {
	low := new(big.Float).SetPrec(24).SetInt64(123456784)
	nums := []cty.Value{cty.Zero, cty.NumberIntVal(-1), cty.NumberIntVal(1 << 53), cty.NumberIntVal(1<<53 + 1), cty.NumberIntVal(-1 << 53),
		cty.NumberIntVal(math.MaxInt64), cty.NumberIntVal(math.MinInt64), cty.NumberFloatVal(1.5), cty.NumberFloatVal(1e308),
		cty.NumberFloatVal(1e-308), cty.NumberFloatVal(math.Copysign(0, -1)), cty.NumberFloatVal(1 << 60), cty.NumberVal(low),
		cty.MustParseNumberVal("18446744073709551616"), cty.MustParseNumberVal("0.1"), cty.PositiveInfinity}
	vals := append([]cty.Value{cty.StringVal(`<a href="x">&</a> é`), cty.True, cty.False, cty.NullVal(cty.String),
		cty.NullVal(cty.DynamicPseudoType), cty.EmptyTupleVal, cty.EmptyObjectVal, cty.ListValEmpty(cty.Number),
		cty.TupleVal([]cty.Value{cty.NullVal(cty.DynamicPseudoType), cty.NumberIntVal(1), cty.StringVal("a")}),
		cty.ListVal([]cty.Value{cty.NumberIntVal(3), cty.NumberFloatVal(0.25)}),
		cty.SetVal([]cty.Value{cty.StringVal("b"), cty.StringVal("a")}),
		cty.MapVal(map[string]cty.Value{"z": cty.NumberIntVal(1), "a": cty.NumberIntVal(2)}),
		cty.ObjectVal(map[string]cty.Value{"b": cty.ListVal([]cty.Value{cty.True}), "a": cty.ObjectVal(map[string]cty.Value{"<": cty.NullVal(cty.Number)})}),
		cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"x": cty.StringVal(strings.Repeat("\u2028", 3))})}),
		cty.UnknownVal(cty.String), cty.StringVal("marked").Mark("m"),
	}, nums...)
	for _, v := range vals {
		want, werr := ctyjson.Marshal(v, v.Type())
		var b bytes.Buffer
		err := appendJSON(&b, v, v.Type())
		switch {
		case err != nil:
			if werr == nil && err != errSlowPath {
				t.Errorf("%#v: %v, cty writes %s", v, err, want)
			}
		case werr != nil:
			t.Errorf("%#v: wrote %s, cty fails: %v", v, b.Bytes(), werr)
		case !bytes.Equal(b.Bytes(), want):
			t.Errorf("%#v: wrote %s, cty writes %s", v, b.Bytes(), want)
		}
	}
}
