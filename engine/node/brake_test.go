package node

import (
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func TestParseMaxDeletes(t *testing.T) {
	for _, c := range []struct {
		in     cty.Value
		err    bool
		text   string
		limits [3]int // at 0, 100 and 1000 entries held
	}{
		{in: cty.StringVal("50%"), text: "50%", limits: [3]int{10, 50, 500}},
		{in: cty.StringVal("2.5%"), text: "2.5%", limits: [3]int{10, 10, 25}},
		{in: cty.StringVal(" 100% "), text: "100%", limits: [3]int{10, 100, 1000}},
		{in: cty.StringVal("0%"), text: "0%", limits: [3]int{10, 10, 10}},
		{in: cty.NumberIntVal(100), text: "100", limits: [3]int{100, 100, 100}},
		{in: cty.NumberIntVal(0), text: "0", limits: [3]int{0, 0, 0}},
		{in: cty.StringVal("7"), text: "7", limits: [3]int{7, 7, 7}},
		{in: cty.StringVal("150%"), err: true},
		{in: cty.StringVal("-1%"), err: true},
		{in: cty.NumberIntVal(-1), err: true},
		{in: cty.NumberFloatVal(1.5), err: true},
		{in: cty.StringVal("half"), err: true},
		{in: cty.True, err: true},
		{in: cty.NullVal(cty.String), err: true},
	} {
		t.Run(c.in.GoString(), func(t *testing.T) {
			m, err := ParseMaxDeletes(c.in)
			if (err != nil) != c.err {
				t.Fatalf("err = %v, want error %v", err, c.err)
			}
			if c.err {
				return
			}
			got := [3]int{m.Limit(0), m.Limit(100), m.Limit(1000)}
			if m.String() != c.text || got != c.limits {
				t.Fatalf("%s with limits %v, want %s with %v", m, got, c.text, c.limits)
			}
		})
	}
	var zero MaxDeletes
	if zero.String() != DefaultMaxDeletes || zero.Limit(1000) != 500 {
		t.Fatalf("the zero MaxDeletes is %s, limit %d at 1000; want the default %s", zero, zero.Limit(1000), DefaultMaxDeletes)
	}
}
