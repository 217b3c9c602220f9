package engine

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// TestExplainStatuses: explain reports a refused entry as wanted and not
// in the target, with its attempts and error, an applied one with the fan-in input it came from, a conflict
// per key, and for an absent key the nodes that still hold it.
func TestExplainStatuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := nodetest.NewMemSink()
		sink.FailKey = func(k node.Key) bool { return k == "bad" }
		h := startFanIn(t, "", sink)
		origin := &node.Origin{Source: "source.script.a", Namespace: "shop", Name: "web-1"}
		h.a.Ops <- func(o node.Output) {
			o.Apply([]node.Delta{{Key: "k", Value: str("1"), Origin: origin}, {Key: "bad", Value: str("x")}, {Key: "clash", Value: str("a")}})
			o.MarkSynced()
		}
		h.b.Ops <- func(o node.Output) { o.Replace(recs("clash", "b")); o.MarkSynced() }
		synctest.Wait()
		ctx := context.Background()

		ex := h.rt.Explain(ctx, "k")
		if len(ex.Entries) != 1 || ex.Entries[0].Status != "applied" || ex.Entries[0].Origin != origin {
			t.Fatalf("explain k: %+v", ex)
		}
		if p := ex.Entries[0].Path; len(p) != 1 || p[0].Node != "source.script.a" || !p[0].Present {
			t.Fatalf("explain k path: %+v", p)
		}

		time.Sleep(time.Second) // let a retry fail too
		synctest.Wait()
		ex = h.rt.Explain(ctx, "bad")
		if len(ex.Entries) != 1 || ex.Entries[0].Status != "wanted, not in the target" || ex.Entries[0].Attempts == 0 || ex.Entries[0].LastError == "" {
			t.Fatalf("explain bad: %+v", ex)
		}
		if ex.Entries[0].Origin == nil || ex.Entries[0].Origin.Source != "source.script.a" {
			t.Fatalf("a record without its own origin names its source: %+v", ex.Entries[0].Origin)
		}

		ex = h.rt.Explain(ctx, "clash")
		if len(ex.Entries) != 1 || ex.Entries[0].Conflict == "" {
			t.Fatalf("explain clash: %+v", ex)
		}

		ex = h.rt.Explain(ctx, "nowhere")
		if len(ex.Entries) != 0 || len(ex.Seen) != 0 {
			t.Fatalf("explain nowhere: %+v", ex)
		}
	})
}
