package plan

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"
	"go.uber.org/goleak"

	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

const planGraph = `
source "script" "s" {}
source "script" "empty" {}
transform "pass" "a" { input = source.script.s }
sink "mem" "m" {
  input = transform.pass.a
  prune = %v
}
sink "mem" "log" { input = source.script.s }
sink "mem" "none" { input = source.script.empty }
`

// boundedSink is a MemSink whose target describes itself with a capacity.
type boundedSink struct {
	*nodetest.MemSink
	max int
}

type boundedTarget struct {
	node.Target
	max int
}

func (b boundedSink) Open(ctx context.Context, env node.Env, mode node.Mode) (node.Target, error) {
	t, err := b.MemSink.Open(ctx, env, mode)
	return boundedTarget{t, b.max}, err
}

func (b boundedTarget) Describe() node.TargetInfo {
	return node.TargetInfo{Location: "memory", Kind: "mem", Exists: true, MaxEntries: b.max}
}

func (b boundedTarget) Show(e node.Entry) string { return "shown:" + e.Value.AsString() }

func planOnce(t *testing.T, prune bool, m *nodetest.MemSink, log *nodetest.MemSink) (*PlanResult, error) {
	t.Helper()
	src, empty := newScriptSource(), newScriptSource()
	g := mustCompile(t, fmt.Sprintf(planGraph, prune), map[string]any{"source.script.s": src, "source.script.empty": empty,
		"sink.mem.m": boundedSink{m, 5}, "sink.mem.log": log, "sink.mem.none": nodetest.NewMemSink()})
	src.Ops <- func(o node.Output) {
		o.Replace([]node.Record{{Key: "a", Value: cty.StringVal("1")}, {Key: "b", Value: cty.StringVal("2")},
			{Key: "c", Value: cty.StringVal("3")}, {Key: "bad", Value: cty.StringVal("x")}})
		o.MarkSynced()
	}
	empty.Ops <- func(o node.Output) { o.MarkSynced() }
	return Plan(context.Background(), g, PlanOptions{Wait: 10 * time.Second})
}

// TestPlan checks the diff of a target with drift, the append-only view,
// the warnings, and that plan writes nothing.
func TestPlan(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, prune := range []bool{true, false} {
		t.Run(fmt.Sprintf("prune=%v", prune), func(t *testing.T) {
			m, log := nodetest.NewMemSink(), nodetest.NewMemSink()
			m.Reject = func(r node.Record) error {
				if r.Key == "bad" {
					return errors.New("not a number")
				}
				return nil
			}
			log.AppendOnly = true
			m.Set("a", cty.StringVal("1"))
			m.Set("b", cty.StringVal("old"))
			m.Set("stale", cty.StringVal("9"))
			p, err := planOnce(t, prune, m, log)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range p.Sinks {
				for _, c := range s.Changes {
					got = append(got, fmt.Sprintf("%s %c %s %s->%s %v", s.Address, c.Action, c.Key, c.Before, c.After, c.Origins))
				}
			}
			want := []string{
				"sink.mem.log + a -> [source.script.s a]", "sink.mem.log + b -> [source.script.s b]", "sink.mem.log + bad -> [source.script.s bad]", "sink.mem.log + c -> [source.script.s c]",
				"sink.mem.m ~ b shown:old->shown:2 [source.script.s b]", "sink.mem.m + c ->shown:3 [source.script.s c]",
			}
			if prune {
				want = append(want, "sink.mem.m - stale shown:9-> []")
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
			var warnings []string
			for _, w := range p.Warnings {
				warnings = append(warnings, w.Address+": "+w.Message)
			}
			// 3 entries projected with prune, 4 (80% of 5: not above) without.
			wantW := []string{"sink.mem.m: keeps 1 keys no record wants because prune = false"}
			if prune {
				wantW = []string{"sink.mem.m: would prune 1 keys no record of this configuration wants (prune = true): check that no other writer owns them"}
			}
			wantW = append(wantW, "sink.mem.m: 1 records cannot be written and would be skipped; the first: bad: not a number",
				"source.script.empty: matched nothing: the source synced with no records")
			if diff := cmp.Diff(wantW, warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			a, c, r := p.Counts()
			if a != 1 || c != 1 || r != map[bool]int{true: 1, false: 0}[prune] || p.Emits() != 4 {
				t.Errorf("counts %d %d %d emits %d", a, c, r, p.Emits())
			}
			if u, d, _ := m.Counts(); u+d != 0 {
				t.Errorf("plan wrote to the target: %d updates, %d deletes", u, d)
			}
			if u, d, _ := log.Counts(); u+d != 0 {
				t.Errorf("plan wrote to the append-only target: %d updates, %d deletes", u, d)
			}
		})
	}
}

// TestPlanCapacity checks the capacity warnings: above 80% and over.
func TestPlanCapacity(t *testing.T) {
	defer goleak.VerifyNone(t)
	m := nodetest.NewMemSink()
	for _, k := range []string{"x", "y", "z"} {
		m.Set(k, cty.StringVal("0"))
	}
	p, err := planOnce(t, false, m, nodetest.NewMemSink())
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, w := range p.Warnings {
		found = found || strings.Contains(w.Message, "7 entries would not fit: max_entries is 5")
	}
	if !found {
		t.Errorf("no capacity warning in %v", p.Warnings)
	}
}

// TestPlanFails checks the phases a plan fails in.
func TestPlanFails(t *testing.T) {
	defer goleak.VerifyNone(t)
	m := nodetest.NewMemSink()
	m.FailActual = func() error { return errors.New("permission denied") }
	_, err := planOnce(t, true, m, nodetest.NewMemSink())
	if err == nil || err.Error() != "sink.mem.m: read target: permission denied" {
		t.Errorf("err = %v", err)
	}

	src := newScriptSource()
	src.FailFirst = true
	g := mustCompile(t, `
source "script" "s" {}
sink "mem" "m" { input = source.script.s }
`, map[string]any{"source.script.s": src, "sink.mem.m": nodetest.NewMemSink()})
	_, err = Plan(context.Background(), g, PlanOptions{Wait: 10 * time.Second})
	if err == nil || !strings.HasPrefix(err.Error(), "sync sources: ") {
		t.Errorf("err = %v, want the sync phase", err)
	}

	g = mustCompile(t, `
source "script" "s" {}
sink "mem" "m" { input = source.script.s }
`, map[string]any{"source.script.s": newScriptSource(), "sink.mem.m": nodetest.NewMemSink()})
	_, err = Plan(context.Background(), g, PlanOptions{Wait: 100 * time.Millisecond})
	if err == nil || err.Error() != "sync sources: not synced after 100ms: source.script.s" {
		t.Errorf("err = %v, want a timeout naming the source", err)
	}

	// The timeout says why, as far as the source does.
	src = newScriptSource()
	src.Pending = "dial tcp: lookup nats.example: no such host"
	g = mustCompile(t, `
source "script" "s" {}
sink "mem" "m" { input = source.script.s }
`, map[string]any{"source.script.s": src, "sink.mem.m": nodetest.NewMemSink()})
	_, err = Plan(context.Background(), g, PlanOptions{Wait: 100 * time.Millisecond})
	if want := "sync sources: not synced after 100ms: source.script.s (pending: dial tcp: lookup nats.example: no such host)"; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}

// TestGraphStateRoundTrip: a running graph's state, rebuilt, diffs equal
// to the graph itself, and a changed node shows as rebuilt.
func TestGraphStateRoundTrip(t *testing.T) {
	impls := map[string]any{"source.script.s": newScriptSource(), "source.script.empty": newScriptSource(),
		"sink.mem.m": nodetest.NewMemSink(), "sink.mem.log": nodetest.NewMemSink(), "sink.mem.none": nodetest.NewMemSink()}
	g := mustCompile(t, fmt.Sprintf(planGraph, true), impls)
	rt, err := engine.NewRuntime(g, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := rt.GraphState()
	if d := graph.DiffGraphs(st.Graph(), g); d.Changed() {
		t.Errorf("a graph differs from its own state: %+v", d.Nodes)
	}
	g2 := mustCompile(t, fmt.Sprintf(planGraph, false), impls)
	d := graph.DiffGraphs(st.Graph(), g2)
	if a, _ := d.Action("sink.mem.m"); a != graph.Rebuilt {
		t.Errorf("sink.mem.m with prune changed: %s, want rebuilt", a)
	}
	if a, _ := d.Action("source.script.s"); a != graph.Kept {
		t.Errorf("source.script.s: %s, want kept", a)
	}
}

// pendingPass is a pass transform holding one deletion back.
type pendingPass struct {
	passTransform
	due time.Time
}

var _ node.PendingLister = pendingPass{}

func (p pendingPass) Pending() []node.PendingDeletion {
	return []node.PendingDeletion{{Key: "gone", Due: p.due}}
}

func (p pendingPass) PendingDue(k node.Key) (time.Time, bool) { return p.due, k == "gone" }

// TestPlanPending: the deletions a transform upstream holds back show in
// the sink's plan and in the running graph's state.
func TestPlanPending(t *testing.T) {
	defer goleak.VerifyNone(t)
	due := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	src, empty := newScriptSource(), newScriptSource()
	g := mustCompile(t, fmt.Sprintf(planGraph, true), map[string]any{"source.script.s": src, "source.script.empty": empty,
		"sink.mem.m": nodetest.NewMemSink(), "sink.mem.log": nodetest.NewMemSink(), "sink.mem.none": nodetest.NewMemSink()})
	g.Node("transform.pass.a").Transform = pendingPass{due: due}
	src.Ops <- func(o node.Output) { o.MarkSynced() }
	empty.Ops <- func(o node.Output) { o.MarkSynced() }
	p, err := Plan(context.Background(), g, PlanOptions{Wait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	want := []node.PendingDeletion{{Key: "gone", Due: due}}
	for _, s := range p.Sinks {
		var w []node.PendingDeletion
		if s.Address == "sink.mem.m" {
			w = want
		}
		if d := cmp.Diff(w, s.Pending); d != "" {
			t.Errorf("%s pending (-want +got):\n%s", s.Address, d)
		}
	}
	rt, err := engine.NewRuntime(g, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range rt.GraphState().Nodes {
		if n.Address == "transform.pass.a" {
			if d := cmp.Diff(want, n.Pending); d != "" {
				t.Errorf("graph state pending (-want +got):\n%s", d)
			}
		}
	}
}

// TestPlanFanIn: a sink with several inputs plans the union, each entry
// with the source it comes from, named by the object its provenance
// names when it names one.
func TestPlanFanIn(t *testing.T) {
	defer goleak.VerifyNone(t)
	a, b := newScriptSource(), newScriptSource()
	g := mustCompile(t, `
source "script" "a" {}
source "script" "b" {}
sink "mem" "m" { inputs = [source.script.a, source.script.b] }
`, map[string]any{"source.script.a": a, "source.script.b": b, "sink.mem.m": nodetest.NewMemSink()})
	a.Ops <- func(o node.Output) {
		o.Replace([]node.Record{{Key: "x", Value: cty.StringVal("1"), Origin: &node.Origin{Source: "source.script.a", Namespace: "shop", Name: "web-1"}}})
		o.MarkSynced()
	}
	b.Ops <- func(o node.Output) { o.Replace([]node.Record{{Key: "y", Value: cty.StringVal("2")}}); o.MarkSynced() }
	p, err := Plan(context.Background(), g, PlanOptions{Wait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range p.Sinks[0].Changes {
		got = append(got, fmt.Sprintf("%c %s %v", c.Action, c.Key, c.Origins))
	}
	if d := cmp.Diff([]string{"+ x [source.script.a shop/web-1]", "+ y [source.script.b y]"}, got); d != "" {
		t.Errorf("changes (-want +got):\n%s", d)
	}
}
