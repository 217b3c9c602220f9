package ebpfmap

import (
	"bytes"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/schema"
)

// TestEncodeSensitive checks that a value marked sensitive is encoded raw
// (the kernel needs its bytes) and that an error about it does not show it.
func TestEncodeSensitive(t *testing.T) {
	for _, tc := range []struct {
		typ   string
		order string
		v     cty.Value
		want  []byte
		err   bool
	}{
		{typ: "ipv4", v: schema.MarkSensitive(cty.StringVal("10.0.0.7")), want: []byte{10, 0, 0, 7}},
		{typ: "u16", order: "be", v: schema.MarkSensitive(cty.NumberIntVal(258)), want: []byte{1, 2}},
		{typ: "bytes(2)", v: cty.TupleVal([]cty.Value{cty.NumberIntVal(1), schema.MarkSensitive(cty.NumberIntVal(2))}), want: []byte{1, 2}},
		{typ: "string(4)", v: schema.MarkSensitive(cty.StringVal(`a"\`)), want: []byte{'a', '"', '\\', 0}},
		{typ: "ipv4", v: schema.MarkSensitive(cty.StringVal(`Q"\`)), err: true},
		{typ: "u8", v: schema.MarkSensitive(cty.NumberIntVal(70000)), err: true},
	} {
		e, err := parseScalar(tc.typ, tc.order)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, e.size)
		err = e.encode(tc.v, b)
		switch {
		case tc.err && err == nil:
			t.Errorf("%s %#v: no error", tc.typ, tc.v)
		case tc.err && (strings.Contains(err.Error(), "Q") || strings.Contains(err.Error(), "70000") || !strings.Contains(err.Error(), "sensitive")):
			t.Errorf("%s: error shows the value or does not say why it is hidden: %v", tc.typ, err)
		case !tc.err && err != nil:
			t.Errorf("%s %#v: %v", tc.typ, tc.v, err)
		case !tc.err && !bytes.Equal(b, tc.want):
			t.Errorf("%s: %v, want %v", tc.typ, b, tc.want)
		}
	}
}
