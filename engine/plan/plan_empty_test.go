package plan

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// skippingSource syncs with no record after reading input it skipped all
// of, which it says in its health, as source "files" does; it keeps the
// Env it was run with.
type skippingSource struct{ env chan node.Env }

func (s skippingSource) Run(ctx context.Context, env node.Env, out node.Output) error {
	s.env <- env
	env.Health.Set(node.Degraded, "1 input(s) read, all skipped")
	out.Replace(nil)
	out.MarkSynced()
	<-ctx.Done()
	return nil
}

// Plan tells a source that matched input but kept no record of it from
// one that matched nothing, and runs sources as one-shot (no watches).
func TestPlanEmptySourceWarnings(t *testing.T) {
	skip := skippingSource{env: make(chan node.Env, 1)}
	empty := newScriptSource()
	empty.Ops <- func(o node.Output) { o.Replace(nil); o.MarkSynced() }
	g := mustCompile(t, `
source "script" "skipped" {}
source "script" "empty" {}
sink "mem" "a" { input = source.script.skipped }
sink "mem" "b" { input = source.script.empty }
`, map[string]any{"source.script.skipped": skip, "source.script.empty": empty,
		"sink.mem.a": nodetest.NewMemSink(), "sink.mem.b": nodetest.NewMemSink()})
	p, err := Plan(context.Background(), g, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range p.Warnings {
		got = append(got, w.Address+": "+w.Message)
	}
	want := []string{"source.script.empty: matched nothing: the source synced with no records",
		"source.script.skipped: synced with no records: 1 input(s) read, all skipped"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings (-want +got)\n%s", diff)
	}
	if env := <-skip.env; !env.OneShot {
		t.Error("plan ran a source without OneShot")
	}
}
