package natsconn

import (
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func TestEscapeKeyRoundTrip(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"10.0.0.7/32", "10.0.0.7/32"},
		{"shop/backend-1", "shop/backend-1"},
		{"fd00::1/128", "fd00=3A=3A1/128"},
		{".lead", "=2Elead"},
		{"trail.", "trail=2E"},
		{"a..b", "a.=2Eb"},
		{"x=y z*>", "x=3Dy=20z=2A=3E"},
		{"é", "=C3=A9"},
	} {
		got, err := EscapeKey(c.in)
		if err != nil || got != c.want {
			t.Errorf("EscapeKey(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
		back, err := UnescapeKey(got)
		if err != nil || back != c.in {
			t.Errorf("UnescapeKey(%q) = %q, %v; want %q", got, back, err, c.in)
		}
		if why := ValidPrefix(got); why != "" {
			t.Errorf("escaped key %q is not a valid key: %s", got, why)
		}
	}
	if _, err := EscapeKey(""); err == nil {
		t.Error("EscapeKey(\"\") succeeded")
	}
	for _, bad := range []string{"=", "=4", "=zz", "a=4G"} {
		if _, err := UnescapeKey(bad); err == nil {
			t.Errorf("UnescapeKey(%q) succeeded", bad)
		}
	}
}

func TestValueRoundTrip(t *testing.T) {
	v := cty.ObjectVal(map[string]cty.Value{"pod": cty.StringVal("a"), "n": cty.NumberIntVal(3), "tags": cty.TupleVal([]cty.Value{cty.True})})
	b, _, err := EncodeValue(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"n":3,"pod":"a","tags":[true]}` {
		t.Fatalf("EncodeValue = %s", b)
	}
	back, err := DecodeValue(b)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equals(v).True() {
		t.Fatalf("DecodeValue = %#v, want %#v", back, v)
	}
	if _, err := DecodeValue([]byte("{")); err == nil {
		t.Fatal("DecodeValue of broken JSON succeeded")
	}
}
