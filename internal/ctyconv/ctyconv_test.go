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
