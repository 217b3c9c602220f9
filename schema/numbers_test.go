package schema

import (
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// One number has one key, whichever way it was spelled.
func TestRecordKeyNumbers(t *testing.T) {
	for text, want := range map[string]string{"-0": "0", "-0.0": "0", "0.0": "0", "1e3": "1000", "-2.5": "-2.5"} {
		v, err := cty.ParseNumberVal(text)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := RecordKey(v); err != nil || got != want {
			t.Errorf("RecordKey(%s) = %q, %v; want %q", text, got, err, want)
		}
	}
}
