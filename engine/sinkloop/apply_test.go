package sinkloop

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// TestAddData: a chunk takes the width of its first entry; a delete's
// longer Data is cut to it and a shorter one cuts the chunk (a delete
// reads only the key its Data start with); an upsert of another width
// and empty Data are refused.
func TestAddData(t *testing.T) {
	for _, tc := range []struct {
		name  string
		del   bool
		add   []string
		want  string
		width int
		ok    []bool
	}{
		{"upserts", false, []string{"ab", "cd", "efg", ""}, "abcd", 2, []bool{true, true, false, false}},
		{"longer delete", true, []string{"ab", "cde"}, "abcd", 2, []bool{true, true}},
		{"shorter delete", true, []string{"abc", "def", "gh"}, "abdegh", 2, []bool{true, true, true}},
		{"empty delete", true, []string{"ab", ""}, "ab", 2, []bool{true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w writes
			var ok []bool
			for _, d := range tc.add {
				if w.addData([]byte(d), tc.del) {
					w.states = append(w.states, &keyState{})
					ok = append(ok, true)
				} else {
					ok = append(ok, false)
				}
			}
			if d := cmp.Diff(tc.ok, ok); d != "" {
				t.Errorf("taken (-want +got):\n%s", d)
			}
			if string(w.data) != tc.want || w.width != tc.width || len(w.states)*w.width != len(w.data) {
				t.Errorf("chunk %q of width %d with %d states; want %q of width %d", w.data, w.width, len(w.states), tc.want, tc.width)
			}
		})
	}
}

// TestKeep: a target written in chunks shows an entry's value from its
// bytes, so the state keeps the value only where they cannot show it: a
// sensitive value (its mark) and an entry without Data; another target's
// state keeps every value.
func TestKeep(t *testing.T) {
	secret := schema.MarkSensitive(cty.StringVal("00000007"))
	for _, tc := range []struct {
		name    string
		chunked bool
		e       node.Entry
		kept    bool
	}{
		{"chunked", true, node.Entry{Value: cty.StringVal("00000007"), Data: []byte{1}}, false},
		{"chunked, sensitive", true, node.Entry{Value: secret, Data: []byte{1}}, true},
		{"chunked, no Data", true, node.Entry{Value: cty.StringVal("x")}, true},
		{"plain", false, node.Entry{Value: cty.StringVal("x"), Data: []byte{1}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &state{}
			if tc.chunked {
				s.chunked = discardData{}
			}
			k := s.keep(&tc.e)
			if (k.value != nil) != tc.kept || (k.value != nil && !k.value.RawEquals(tc.e.Value)) {
				t.Fatalf("kept %v, want kept %v", k.value, tc.kept)
			}
		})
	}
}
