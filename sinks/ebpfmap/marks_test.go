package ebpfmap

import (
	"bytes"
	"fmt"
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

// TestPrepareSensitive: a value computed from a secret is written, and the
// entry shows it marked (views mask its hex); a key computed from a secret
// is refused, as keys are shown.
func TestPrepareSensitive(t *testing.T) {
	dir := requireBPF(t)
	tg, _ := open(t, fmt.Sprintf("pin = %q\nkey {\n type = \"ipv4\"\n from = record.value.ip\n}\nvalue {\n type = \"u8\"\n from = record.value.n\n}", dir+"/s"))
	v := func(ip, n cty.Value) cty.Value { return cty.ObjectVal(map[string]cty.Value{"ip": ip, "n": n}) }
	e, err := tg.Prepare(rec("a", v(cty.StringVal("10.0.0.1"), schema.MarkSensitive(cty.NumberIntVal(7)))))
	if err != nil {
		t.Fatal(err)
	}
	if !schema.IsSensitive(e.Value) || e.Key != "10.0.0.1" || e.Data[len(e.Data)-1] != 7 {
		t.Errorf("entry %q %#v %v: want the raw byte written and the value marked", e.Key, e.Value, e.Data)
	}
	if e, err := tg.Prepare(rec("b", v(schema.MarkSensitive(cty.StringVal("10.0.0.2")), cty.NumberIntVal(1)))); err == nil || strings.Contains(err.Error(), "10.0.0.2") {
		t.Errorf("a sensitive key gave %q, %v", e.Key, err)
	}
}
