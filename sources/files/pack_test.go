package files

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/zclconf/go-cty/cty"

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

// BenchmarkPackedValuePod builds row F1's small Pod from its packed JSON,
// as extract does for every record it evaluates (docs/performance.md, F1).
func BenchmarkPackedValuePod(b *testing.B) {
	p := packedJSON(`{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"v":"a"},"name":"p000001","namespace":"ns"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if v := p.Value(); v.IsNull() {
			b.Fatal("null")
		}
	}
}

// checkFields asks p for every attribute path of its built value, and for
// one absent attribute below each object, and compares the answers with
// the built value's. Text not in NFC is only read: the built value's
// names are in NFC, and two names that become one are built in no fixed
// order.
func checkFields(t *testing.T, p packedJSON) {
	t.Helper()
	nfc := cty.NormalizeString(string(p)) == string(p)
	var walk func(v cty.Value, path []string)
	walk = func(v cty.Value, path []string) {
		if len(path) > 0 {
			got, ok := p.Field(path)
			if !nfc {
				return
			}
			if !ok || !got.RawEquals(v) {
				t.Fatalf("%s: Field(%q) = %#v, %v; the built value has %#v", p, path, got, ok, v)
			}
		}
		if v.IsNull() || !v.Type().IsObjectType() {
			if len(path) > 0 {
				if got, ok := p.Field(append(slices.Clone(path), "x")); ok {
					t.Fatalf("%s: Field(%q) = %#v below a value that is not an object", p, append(path, "x"), got)
				}
			}
			return
		}
		absent := append(slices.Clone(path), "absent\"")
		if got, ok := p.Field(absent); ok {
			t.Fatalf("%s: Field(%q) = %#v for an absent attribute", p, absent, got)
		}
		for name, a := range v.AsValueMap() {
			walk(a, append(slices.Clone(path), name))
		}
	}
	walk(p.Value(), nil)
}

// TestPackedFields: a packed record answers each of its attribute paths
// with the value its built form has there, and no absent one.
func TestPackedFields(t *testing.T) {
	for _, doc := range []string{
		`{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"v":"a"},"name":"p000001","namespace":"ns"}}`,
		`{"a":[{"b":1}],"b":{},"c":null,"d":true,"e":false,"f":[1,"x",[2,{"g":null}]],"g":{"h":{"i":-1.5e3}}}`,
		`{"s":"a\"b\\c\/d\n\t\u003c\u0026\u003e","e\u0301":"e\u0301","emoji":"\ud83d\ude00","k\"ey":{"\"":"}"},"z":"]"}`,
		`{"":{"":""},"x":"{[,"}`,
		`[{"a":1}]`, `{}`, `"x"`, `1`, `null`,
	} {
		x, err := decodeData([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		b, err := json.Marshal(x) // what the source packs
		if err != nil {
			t.Fatal(err)
		}
		checkFields(t, packedJSON(b))
	}
}

// FuzzPackedFields: TestPackedFields for any JSON object.
func FuzzPackedFields(f *testing.F) {
	f.Add(`{"a":{"b":[1,{"c":"d"}],"e":"\u00e9\"}"},"f":null}`)
	f.Add(`{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"v":"a"},"name":"p000001","namespace":"ns"}}`)
	f.Fuzz(func(t *testing.T, doc string) {
		x, err := decodeData([]byte(doc))
		if err != nil {
			return
		}
		if _, err := ctyconv.ToCty(x); err != nil {
			return // no record value: the source skips it
		}
		b, err := json.Marshal(x)
		if err != nil {
			return
		}
		checkFields(t, packedJSON(b))
	})
}
