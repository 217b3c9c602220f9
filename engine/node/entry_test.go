package node

import (
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/schema"
)

// TestEntrySameIgnoresMarks: a desired value computed from a secret equals
// the raw value a target reads back, so a sensitive record causes no
// endless rewrite; a different value is still different.
func TestEntrySameIgnoresMarks(t *testing.T) {
	raw := cty.ObjectVal(map[string]cty.Value{"v": cty.StringVal("Q")})
	marked := cty.ObjectVal(map[string]cty.Value{"v": schema.MarkSensitive(cty.StringVal("Q"))})
	other := cty.ObjectVal(map[string]cty.Value{"v": schema.MarkSensitive(cty.StringVal("R"))})
	if !(Entry{Value: marked}).Same(Entry{Value: raw}) || !(Entry{Value: raw}).Same(Entry{Value: marked}) {
		t.Error("a marked value differs from its raw value")
	}
	if (Entry{Value: other}).Same(Entry{Value: raw}) {
		t.Error("different values are the same")
	}
}
