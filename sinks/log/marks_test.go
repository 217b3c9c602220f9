package log

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/schema"
)

// TestMarkedValuesMasked checks that values marked sensitive print as
// "(sensitive)" in both formats, whatever their length or characters, with
// no string redaction configured.
func TestMarkedValuesMasked(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		s := nodetest.MustBuild(t, Spec(), "input = source.static.x\nformat = \""+format+"\"", up).Sink.(*Sink)
		var buf bytes.Buffer
		s.Out = &buf
		tg, err := s.Open(context.Background(), node.Env{}, node.ModeRun)
		if err != nil {
			t.Fatal(err)
		}
		v := cty.ObjectVal(map[string]cty.Value{
			"a": schema.MarkSensitive(cty.StringVal(`"`)),
			"b": cty.StringVal("plain"),
			"c": cty.ListVal([]cty.Value{schema.MarkSensitive(cty.StringVal(`x\y`))}),
		})
		e, err := tg.Prepare(node.Record{Key: "k", Value: v})
		if err != nil {
			t.Fatal(err)
		}
		tg.Update(context.Background(), []node.Entry{e})
		out := buf.String()
		if strings.Count(out, "(sensitive)") != 2 || !strings.Contains(out, "plain") || strings.Contains(out, `x\`) {
			t.Errorf("%s: %s", format, out)
		}
	}
}
