package template

import (
	"context"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
)

// A change and its undo are both written: the file follows the input back.
func TestFlipBack(t *testing.T) {
	f := open(t, `template = "%{ for i, r in records }server s${i} ${r.key}\n%{ endfor }"`)
	ctx := context.Background()
	f.put("10.0.0.1:1", cty.EmptyObjectVal, full)
	for i, want := range []string{"10.0.0.1:2", "10.0.0.1:1", "10.0.0.1:2"} {
		old := "10.0.0.1:1"
		if want == old {
			old = "10.0.0.1:2"
		}
		f.tg.Update(ctx, []node.Entry{{Key: node.Key(want), Value: cty.EmptyObjectVal}})
		f.tg.Delete(ctx, []node.Entry{{Key: node.Key(old)}})
		f.tg.Commit(ctx, synced)
		if got := f.file(); !strings.Contains(got, want) || strings.Contains(got, old) {
			t.Fatalf("change %d: file %q, want %s only", i, got, want)
		}
	}
}
