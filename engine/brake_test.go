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
		if got := testutil.ToFloat64(h.met.deletesBraked.WithLabelValues("sink.mem.m")); got != 100 {
			t.Fatalf("pipeline_sink_deletes_held = %v, want 100", got)
		}
		st := h.rt.Readiness()
		if st.Ready || !strings.Contains(fmt.Sprint(st), "100 deletes held by the deletion brake") {
			t.Fatalf("readiness: %+v", st)
		}
		if !slices.Contains(h.rec.kinds(), node.DecisionDeletesBraked) {
			t.Fatalf("decisions %v, want %s", h.rec.kinds(), node.DecisionDeletesBraked)
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
		if got := testutil.ToFloat64(h.met.deletesBraked.WithLabelValues("sink.mem.m")); got != 0 {
			t.Fatalf("pipeline_sink_deletes_held = %v after the release, want 0", got)
		}
		if st := h.rt.Readiness(); !st.Ready {
			t.Fatalf("readiness after the release: %+v", st)
		}
	})
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
