package ctyconv

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"
)

func TestRoundTrip(t *testing.T) {
	src := `{"metadata":{"name":"a","labels":{"app":"x"}},"spec":{"n":3,"f":1.5,"ok":true,"none":null,"list":["a",1,{"b":[]}],"empty":{}}}`
	var v any
	if err := json.Unmarshal([]byte(src), &v); err != nil {
		t.Fatal(err)
	}
	c, err := ToCty(v)
	if err != nil {
		t.Fatal(err)
	}
	back := FromCty(c)
	var want any
	_ = json.Unmarshal([]byte(src), &want)
	// numbers come back as int64 when whole
	want.(map[string]any)["spec"].(map[string]any)["n"] = int64(3)
	want.(map[string]any)["spec"].(map[string]any)["list"].([]any)[1] = int64(1)
	if d := cmp.Diff(want, back); d != "" {
		t.Fatalf("round trip (-want +got):\n%s", d)
	}
	if got := String(c.GetAttr("metadata")); got != `{"labels":{"app":"x"},"name":"a"}` {
		t.Fatalf("String = %s", got)
	}
}

func TestUnsupported(t *testing.T) {
	if _, err := ToCty(map[string]any{"x": struct{}{}}); err == nil {
		t.Fatal("want error for struct value")
	}
}

// TestFromCtyMarked: the raw value comes back whatever its marks, and the
// walk reports whether any part carried one.
func TestFromCtyMarked(t *testing.T) {
	plain := cty.ObjectVal(map[string]cty.Value{"a": cty.StringVal("x")})
	marked := cty.ObjectVal(map[string]cty.Value{"a": cty.StringVal("x"),
		"l": cty.ListVal([]cty.Value{cty.StringVal("Q").Mark("sensitive")})})
	if _, m := FromCtyMarked(plain); m {
		t.Error("a value without marks reported marked")
	}
	got, m := FromCtyMarked(marked)
	if !m {
		t.Error("a marked part was not reported")
	}
	if s := fmt.Sprint(got); s != "map[a:x l:[Q]]" {
		t.Errorf("raw value %s", s)
	}
}

// Number is exact, as the configuration language reads a literal, on
// every path: integers, fractions a float64 holds, and the others.
func TestNumberExact(t *testing.T) {
	for _, text := range []string{"0", "-7", "9223372036854775807", "9223372036854775808", "123456789012345678901234567890",
		"0.5", "-0.25", "1.125", "1.50", "0.1", "3.14159265358979323846264338327950288", "1e-7", "2.5e3",
		"4503599627370495.5", "9007199254740993.0", "0.000000000000000001"} {
		got, err := Number(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		want := cty.MustParseNumberVal(text)
		if !got.Equals(want).True() {
			t.Errorf("%s: got %s, want %s", text, got.AsBigFloat().Text('g', -1), want.AsBigFloat().Text('g', -1))
		}
	}
}

// TestFromCtyNumbers: FromCty gives a number back as int64 or float64 when
// they hold it exactly, else as its exact text, and the text reads back to
// the same number.
func TestFromCtyNumbers(t *testing.T) {
	for text, want := range map[string]any{
		"7": int64(7), "-7": int64(-7), "0.5": 0.5, "2.5e3": int64(2500),
		"9223372036854775808":    json.Number("9223372036854775808"),
		"18446744073709551615":   json.Number("18446744073709551615"),
		"0.1":                    json.Number("0.1"),
		"0.10000000000000000001": json.Number("0.10000000000000000001"),
		"9007199254740993.5":     json.Number("9.0071992547409935e+15"),
		"1e400":                  json.Number("1e+400"),
	} {
		n := cty.MustParseNumberVal(text)
		got := FromCty(n)
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", text, d)
		}
		back, err := ToCty(got)
		if err != nil || !back.Equals(n).True() {
			t.Errorf("%s: read back as %#v, %v", text, back, err)
		}
	}
}
