package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/engine/reconcile"
)

const brakeAudit = "sink \"mem\" \"audit\" {\n  input = source.script.s\n}"

// An emptied input: the sink holds its deletes, says so in /readyz, the
// gauge and a decision, while the audit trail (a decision recorder,
// append-only) records every delete; a reload that raises max_deletes
// applies them.
func TestBrakeReleasedByReload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startReload(t, reloadConfig("", "1m", brakeAudit))
		h.feed(100)
		synctest.Wait()
		h.send(func(o node.Output) { o.Replace(nil) })
		synctest.Wait()
		if n := len(h.sink.Keys()); n != 100 {
			t.Fatalf("after the input emptied the sink holds %d keys, want 100 (held by the brake)", n)
		}
		if n := len(h.rec.Keys()); n != 0 {
			t.Fatalf("the audit trail holds %d keys, want 0: it is not braked", n)
		}
		if got := testutil.ToFloat64(h.met.deletesHeld.WithLabelValues("sink.mem.m")); got != 100 {
			t.Fatalf("pipeline_sink_deletes_held = %v, want 100", got)
		}
		st := h.rt.Readiness()
		if st.Ready || !strings.Contains(fmt.Sprint(st), "100 deletes held by the deletion brake") {
			t.Fatalf("readiness: %+v", st)
		}
		if !slices.Contains(h.rec.kinds(), node.DecisionDeletesHeld) {
			t.Fatalf("decisions %v, want %s", h.rec.kinds(), node.DecisionDeletesHeld)
		}
		ex := h.rt.Explain(context.Background(), "k7")
		i := slices.IndexFunc(ex.Entries, func(e SinkEntry) bool { return e.Sink == "sink.mem.m" })
		if i < 0 || ex.Entries[i].Status != "held by the deletion brake" || !strings.Contains(ex.Entries[i].Brake, "max_deletes = 50%") {
			t.Fatalf("explain k7: %+v", ex.Entries)
		}
		rec := h.reload(reloadConfigInput("", "1m", "input = transform.drop.d\n  max_deletes = 100", brakeAudit))
		synctest.Wait()
		if rec.Result != ReloadApplied {
			t.Fatalf("reload: %+v", rec)
		}
		if n := len(h.sink.Keys()); n != 0 {
			t.Fatalf("after max_deletes = 100 the sink holds %d keys, want 0", n)
		}
		if got := testutil.ToFloat64(h.met.deletesHeld.WithLabelValues("sink.mem.m")); got != 0 {
			t.Fatalf("pipeline_sink_deletes_held = %v after the release, want 0", got)
		}
		if st := h.rt.Readiness(); !st.Ready {
			t.Fatalf("readiness after the release: %+v", st)
		}
	})
}

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
				src.ops <- func(o node.Output) { o.Replace(recs); o.MarkSynced() }
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
				if ch.Action == reconcile.Delete && ch.Held {
					marked++
				}
			}
			if marked != c.held || sp.DeletesHeld != c.held {
				t.Fatalf("plan marks %d deletes held (DeletesHeld %d), want %d", marked, sp.DeletesHeld, c.held)
			}
			warned := slices.ContainsFunc(p.Warnings, func(w PlanWarning) bool { return strings.Contains(w.Message, "held by the deletion brake") })
			if warned != (c.held > 0) || (c.held > 0 && !strings.Contains(sp.Brake, "max_deletes = 50%")) {
				t.Fatalf("warnings %+v, brake %q", p.Warnings, sp.Brake)
			}
			synctest.Test(t, func(t *testing.T) {
				h := &harness{src: feed(), sink: sink, done: make(chan struct{})}
				g := mustCompile(t, cfg, map[string]any{"source.script.s": h.src, "sink.mem.m": sink})
				rt, err := NewRuntime(g, RunOptions{})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				go func() { _ = rt.Run(ctx); close(h.done) }()
				synctest.Wait()
				if got := len(sink.Keys()) - c.keep; got != c.held {
					t.Errorf("run holds %d deletes, plan said %d", got, c.held)
				}
				cancel()
				<-h.done
			})
		})
	}
}

// A max_deletes that is neither a whole count nor a percentage from 0% to
// 100% is a configuration error at the attribute.
func TestBrakeConfigErrors(t *testing.T) {
	for _, v := range []string{`"150%"`, `-1`, `1.5`, `"half"`, `true`} {
		t.Run(v, func(t *testing.T) {
			src := "source \"script\" \"a\" {}\nsink \"mem\" \"m\" {\n  input = source.script.a\n  max_deletes = " + v + "\n}"
			_, diags := compileText(t, src, map[string]any{"source.script.a": newScriptSource(), "sink.mem.m": nodetest.NewMemSink()})
			if len(diags) != 1 || diags[0].Summary != "Invalid max_deletes" || diags[0].Subject.Start.Line != 4 || diags[0].Subject.Start.Column != 17 {
				t.Fatalf("diagnostics: %v", diags)
			}
		})
	}
	for _, v := range []string{`"25%"`, `100`, `0`, `"100%"`} {
		src := "source \"script\" \"a\" {}\nsink \"mem\" \"m\" {\n  input = source.script.a\n  max_deletes = " + v + "\n}"
		if _, diags := compileText(t, src, map[string]any{"source.script.a": newScriptSource(), "sink.mem.m": nodetest.NewMemSink()}); diags.HasErrors() {
			t.Fatalf("max_deletes = %s: %v", v, diags)
		}
	}
}
