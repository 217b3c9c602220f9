package files

import (
	"encoding/json"
	"testing"

	"github.com/pipeline/pipeline/internal/ctyconv"
)

// TestPackedValue: a packed record builds the value that decoding its
// JSON (numbers kept exact) and converting the result gives, for every
// kind of JSON value.
func TestPackedValue(t *testing.T) {
	for _, doc := range []string{
		`{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"v":"a"},"name":"p000001","namespace":"ns"}}`,
		`{"a":[],"b":{},"c":null,"d":true,"e":false,"f":[1,"x",[2,{"g":null}]]}`,
		`{"n":[0,-0,1,-1,1.5,-2.25,1e21,1e+21,1E-7,9223372036854775807,9223372036854775808,-9223372036854775809,12345678901234567890123,0.1]}`,
		`{"s":"a\"b\\c\/d\n\t\u003c\u0026\u003e","e\u0301":"e\u0301","emoji":"\ud83d\ude00","k\"ey":"é"}`,
		`[{"a":1},{"a":"1"}]`,
		`[]`, `{}`, `"x"`, `1`, `null`,
	} {
		x, err := decodeData([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		want, err := ctyconv.ToCty(x)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(x) // what the source packs
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range [][]byte{[]byte(doc), b} {
			if got := packedJSON(in).Value(); !got.RawEquals(want) {
				t.Errorf("%s:\n got %#v\nwant %#v", in, got, want)
			}
		}
	}
}

// BenchmarkPackedValueNumbers builds a record of integers and fractions
// from its packed JSON: integers take the int64 path, fractions the exact
// parse (docs/performance.md).
func BenchmarkPackedValueNumbers(b *testing.B) {
	p := packedJSON(`{"port":8080,"replicas":3,"weight":0.25,"ratio":1.5,"uid":12345678901,"cpu":0.125}`)
	b.ReportAllocs()
	for b.Loop() {
		if v := p.Value(); v.IsNull() {
			b.Fatal("null")
		}
	}
}
