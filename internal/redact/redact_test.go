package redact

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"
)

func TestString(t *testing.T) {
	r := New([]string{"Q", `a"\`, `long"secret\with-quotes`})
	tests := []struct{ in, want string }{
		{"Q", Mask},
		{"Quiet", "Quiet"}, // a short secret inside text is not matched
		{`a"\`, Mask},
		{`"a\"\\"`, Mask},
		{`path /x/long"secret\with-quotes/y`, "path /x/" + Mask + "/y"},
		{`{"v":"long\"secret\\with-quotes"}`, `{"v":"` + Mask + `"}`},
		{`v="long\"secret\\with-quotes"`, `v="` + Mask + `"`},
	}
	for _, tt := range tests {
		if got := r.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := (*Redactor)(nil).String("Q"); got != "Q" {
		t.Errorf("nil redactor masked %q", got)
	}
}

func TestValue(t *testing.T) {
	r := New([]string{"Q", "hunter22"})
	in := cty.ObjectVal(map[string]cty.Value{
		"a": cty.StringVal("Q"),
		"b": cty.ListVal([]cty.Value{cty.StringVal("x-hunter22"), cty.StringVal("Quiet")}),
		"n": cty.NumberIntVal(7),
	})
	want := cty.ObjectVal(map[string]cty.Value{
		"a": cty.StringVal(Mask),
		"b": cty.ListVal([]cty.Value{cty.StringVal("x-" + Mask), cty.StringVal("Quiet")}),
		"n": cty.NumberIntVal(7),
	})
	if got := r.Value(in); !got.RawEquals(want) {
		t.Error(cmp.Diff(want.GoString(), got.GoString()))
	}
}

func TestAdd(t *testing.T) {
	r := New([]string{"first-secret"})
	r.Add([]string{"second-secret"})
	for _, s := range []string{"first-secret", "second-secret"} {
		if got := r.String("token " + s + " leaked"); got != "token "+Mask+" leaked" {
			t.Errorf("String(%q) = %q", s, got)
		}
	}
	var z Redactor
	z.Add([]string{"zero-value"})
	if got := z.String("zero-value"); got != Mask {
		t.Errorf("zero Redactor after Add: %q", got)
	}
}
