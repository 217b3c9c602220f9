package ctyconv

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
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
