package plan

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"
	"go.uber.org/goleak"

	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// foldSink is a MemSink whose target canonicalises keys to lower case, as
// an ebpf_map's ipv4_prefix key drops host bits: "A" and "a" are one key.
type foldSink struct{ *nodetest.MemSink }

type foldTarget struct{ node.Target }

func (f foldSink) Open(ctx context.Context, env node.Env, mode node.Mode) (node.Target, error) {
	t, err := f.MemSink.Open(ctx, env, mode)
	return foldTarget{t}, err
}

func (f foldTarget) Prepare(r node.Record) (node.Entry, error) {
	r.Key = strings.ToLower(r.Key)
	return f.Target.Prepare(r)
}

const foldGraph = `
source "script" "s" {}
sink "mem" "m" {
  input = source.script.s
  %s
}
`

// TestCollidingKeys: two input keys one target key canonicalises to, with
// different values: plan and run pick the same entry whatever the order
// the records arrive in, report a conflict (on_conflict = "error"), and a
// delete of the chosen record leaves the other's value, not the deleted
// one's.
func TestCollidingKeys(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, tc := range []struct {
		rule, want string
		conflict   bool
	}{{"", "1", true}, {`on_conflict = "first"`, "1", false}, {`on_conflict = "last"`, "2", false}} {
		for _, order := range [][]string{{"A", "a"}, {"a", "A"}} {
			t.Run(fmt.Sprint(tc.rule, order), func(t *testing.T) {
				vals := map[string]string{"A": "1", "a": "2"}
				recsIn := recs(order[0], vals[order[0]], order[1], vals[order[1]])
				// plan
				src := newScriptSource()
				g := mustCompile(t, fmt.Sprintf(foldGraph, tc.rule), map[string]any{"source.script.s": src, "sink.mem.m": foldSink{nodetest.NewMemSink()}})
				src.Ops <- func(o node.Output) { o.Replace(recsIn); o.MarkSynced() }
				p, err := Plan(context.Background(), g, PlanOptions{Wait: 10 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				sp := p.Sinks[0]
				if len(sp.Changes) != 1 || sp.Changes[0].New.Value.AsString() != tc.want {
					t.Fatalf("plan: %+v, want a => %s", sp.Changes, tc.want)
				}
				if got := len(sp.Conflicts) > 0; got != tc.conflict {
					t.Errorf("plan conflicts %v, want conflict %v", sp.Conflicts, tc.conflict)
				}
				// run
				synctest.Test(t, func(t *testing.T) {
					sink := nodetest.NewMemSink()
					src := newScriptSource()
					g := mustCompile(t, fmt.Sprintf(foldGraph, tc.rule), map[string]any{"source.script.s": src, "sink.mem.m": foldSink{sink}})
					rt, err := engine.NewRuntime(g, engine.RunOptions{Metrics: engine.NewMetrics(prometheus.NewRegistry(), "test")})
					if err != nil {
						t.Fatal(err)
					}
					ctx, cancel := context.WithCancel(context.Background())
					done := make(chan struct{})
					go func() { _ = rt.Run(ctx); close(done) }()
					defer func() { cancel(); <-done }()
					src.Ops <- func(o node.Output) { o.Apply([]node.Delta{node.Upsert(recsIn[0].Key, recsIn[0].Value, time.Time{})}) }
					src.Ops <- func(o node.Output) {
						o.Apply([]node.Delta{node.Upsert(recsIn[1].Key, recsIn[1].Value, time.Time{})})
						o.MarkSynced()
					}
					synctest.Wait()
					time.Sleep(time.Second)
					synctest.Wait()
					if d := cmp.Diff(map[node.Key]cty.Value{"a": str(tc.want)}, sink.State(), ctyEq()); d != "" {
						t.Errorf("run wrote (-plan +run):\n%s", d)
					}
					ex := rt.Explain(ctx, "a")
					if len(ex.Entries) != 1 || (ex.Entries[0].Conflict != "") != tc.conflict || ex.Entries[0].Status != "applied" {
						t.Errorf("explain: %+v", ex.Entries)
					}
					// Deleting the record whose value the key holds leaves the other's.
					chosen, other := "A", "a"
					if tc.want == "2" {
						chosen, other = "a", "A"
					}
					src.Ops <- func(o node.Output) { o.Apply([]node.Delta{node.Remove(chosen, time.Time{})}) }
					synctest.Wait()
					time.Sleep(time.Second)
					synctest.Wait()
					if d := cmp.Diff(map[node.Key]cty.Value{"a": str(vals[other])}, sink.State(), ctyEq()); d != "" {
						t.Errorf("after deleting %s (-want +got):\n%s", chosen, d)
					}
					if ex := rt.Explain(ctx, "a"); len(ex.Entries) != 1 || ex.Entries[0].Conflict != "" {
						t.Errorf("explain after delete: %+v", ex.Entries)
					}
					src.Ops <- func(o node.Output) { o.Apply([]node.Delta{node.Remove(other, time.Time{})}) }
					synctest.Wait()
					time.Sleep(time.Second)
					synctest.Wait()
					if len(sink.State()) != 0 {
						t.Errorf("after deleting both: %v", sink.State())
					}
				})
			})
		}
	}
}
