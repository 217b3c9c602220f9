package audit

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"
	"go.uber.org/goleak"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// TestMarkedValuesMasked checks that a value marked sensitive is recorded
// as "(sensitive)" however short, with no string redaction configured.
func TestMarkedValuesMasked(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	dir := t.TempDir()
	s := build(t, dir, "")
	tg, _, _ := open(t, s)
	v := cty.ObjectVal(map[string]cty.Value{
		"a": schema.MarkSensitive(cty.StringVal("Q")),
		"b": cty.StringVal("plain"),
		"n": schema.MarkSensitive(cty.NumberIntVal(7)),
	})
	batch := []node.Entry{{Key: "k", Value: v}}
	tg.Update(context.Background(), batch)
	if batch[0].Err != nil {
		t.Fatal(batch[0].Err)
	}
	if err := tg.Close(); err != nil {
		t.Fatal(err)
	}
	var got any
	for _, l := range readLines(t, filepath.Join(dir, "trail.jsonl")) {
		if l["op"] == "upsert" {
			got = l["value"]
		}
	}
	want := map[string]any{"a": "(sensitive)", "b": "plain", "n": "(sensitive)"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("value (-want +got):\n%s", d)
	}
}
