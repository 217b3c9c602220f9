package plan

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/engine/reconcile"
)

// Plan marks the deletes run would hold, with the reason, and run holds
// exactly those; under the limit, plan marks none and run applies them.
func TestBrakePlanAgreesWithRun(t *testing.T) {
	for _, c := range []struct {
		keep, held int
	}{{0, 40}, {25, 0}} {
		t.Run(fmt.Sprint("keep=", c.keep), func(t *testing.T) {
			sink := nodetest.NewMemSink()
			var recs []node.Record
			for i := range 40 {
				k := fmt.Sprintf("k%02d", i)
				sink.Set(k, str("v"))
				if i < c.keep {
					recs = append(recs, node.Record{Key: k, Value: str("v")})
				}
			}
			feed := func() *scriptSource {
				src := newScriptSource()
				src.Ops <- func(o node.Output) { o.Replace(recs); o.MarkSynced() }
				return src
			}
			const cfg = `
source "script" "s" {}
sink "mem" "m" { input = source.script.s }
`
			p, err := Plan(context.Background(), mustCompile(t, cfg, map[string]any{"source.script.s": feed(), "sink.mem.m": sink}), PlanOptions{})
			if err != nil {
				t.Fatal(err)
			}
			sp := p.Sinks[0]
			marked := 0
			for _, ch := range sp.Changes {
				if ch.Action == reconcile.Delete && ch.Braked {
					marked++
				}
			}
			if marked != c.held || sp.DeletesBraked != c.held {
				t.Fatalf("plan marks %d deletes held (DeletesBraked %d), want %d", marked, sp.DeletesBraked, c.held)
			}
			warned := slices.ContainsFunc(p.Warnings, func(w PlanWarning) bool { return strings.Contains(w.Message, "held by the deletion brake") })
			if warned != (c.held > 0) || (c.held > 0 && !strings.Contains(sp.Brake, "max_deletes = 50%")) {
				t.Fatalf("warnings %+v, brake %q", p.Warnings, sp.Brake)
			}
			synctest.Test(t, func(t *testing.T) {
				done := make(chan struct{})
				g := mustCompile(t, cfg, map[string]any{"source.script.s": feed(), "sink.mem.m": sink})
				rt, err := engine.NewRuntime(g, engine.RunOptions{})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				go func() { _ = rt.Run(ctx); close(done) }()
				synctest.Wait()
				if got := len(sink.Keys()) - c.keep; got != c.held {
					t.Errorf("run holds %d deletes, plan said %d", got, c.held)
				}
				cancel()
				<-done
			})
		})
	}
}
