package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/zclconf/go-cty/cty"
	"go.uber.org/goleak"

	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/internal/enginetest"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/schema"
)

// dropTransform passes its input on without the key named by its drop
// attribute: changing drop rebuilds it and changes exactly two keys.
type dropTransform struct{ drop node.Key }

func (d *dropTransform) Run(ctx context.Context, _ node.Env, in node.Input, out node.Output) error {
	for {
		ev, err := in.Next(ctx)
		if err != nil {
			return nil
		}
		if ev.Reset {
			recs := make([]node.Record, 0, len(ev.Snapshot))
			for _, r := range ev.Snapshot {
				if r.Key != d.drop {
					recs = append(recs, r)
				}
			}
			out.Replace(recs)
		}
		var ds []node.Delta
		for _, x := range ev.Deltas {
			if x.Key != d.drop {
				ds = append(ds, x)
			}
		}
		if len(ds) > 0 {
			out.Apply(ds)
		}
		if ev.Synced {
			out.MarkSynced()
		}
	}
}

// brokenSink fails to open its target (a bad pin path, an unreachable server).
type brokenSink struct{}

func (brokenSink) Open(context.Context, node.Env, node.Mode) (node.Target, error) {
	return nil, errors.New("pin path /nonexistent/x: no such file or directory")
}

// brokenSource fails at once, every time.
type brokenSource struct{}

func (brokenSource) Run(context.Context, node.Env, node.Output) error {
	return errors.New("connection refused")
}

// unreadySink opens at once but its target never becomes ready (a server
// that cannot be reached); closed counts its closed targets.
type unreadySink struct {
	*nodetest.MemSink
	closed atomic.Int32
}

func (s *unreadySink) Open(ctx context.Context, env node.Env, m node.Mode) (node.Target, error) {
	t, err := s.MemSink.Open(ctx, env, m)
	return &unreadyTarget{Target: t, s: s}, err
}

type unreadyTarget struct {
	node.Target
	s *unreadySink
}

func (t *unreadyTarget) Ready(ctx context.Context) error {
	<-ctx.Done()
	return errors.New("connection refused")
}

func (t *unreadyTarget) Close() error {
	t.s.closed.Add(1)
	return t.Target.Close()
}

// strictSink is a MemSink that counts every write that changes nothing
// (an unchanged entry rewritten) as a violation.
type strictSink struct {
	*nodetest.MemSink
	mu        sync.Mutex
	rewritten []node.Key
}

func (s *strictSink) Open(ctx context.Context, env node.Env, m node.Mode) (node.Target, error) {
	t, err := s.MemSink.Open(ctx, env, m)
	return &strictTarget{Target: t, s: s}, err
}

func (s *strictSink) violations() []node.Key {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]node.Key(nil), s.rewritten...)
}

type strictTarget struct {
	node.Target
	s *strictSink
}

func (t *strictTarget) Update(ctx context.Context, batch []node.Entry) {
	held := t.s.State()
	t.s.mu.Lock()
	for _, e := range batch {
		if v, ok := held[e.Key]; ok && v.RawEquals(e.Value) {
			t.s.rewritten = append(t.s.rewritten, e.Key)
		}
	}
	t.s.mu.Unlock()
	t.Target.Update(ctx, batch)
}

var dropAttr = schema.String("drop")

// reloadRegistry is testRegistry plus a "drop" transform, a "broken" sink
// and a "broken" source. Sources and sinks come from impls by address.
func reloadRegistry(impls map[string]any) *node.Registry {
	return node.NewRegistry(
		node.Spec{Kind: node.KindSource, Type: "script", Summary: "test", Output: node.Records, NewSource: enginetest.Pick[node.Source](impls)},
		node.Spec{Kind: node.KindSource, Type: "broken", Summary: "test", Output: node.Records,
			NewSource: func(node.Build) (node.Source, hcl.Diagnostics) { return brokenSource{}, nil }},
		node.Spec{Kind: node.KindTransform, Type: "drop", Summary: "test", Output: node.SameAsInput,
			Body: schema.Block{Attrs: []schema.Attribute{dropAttr}},
			NewTransform: func(b node.Build) (node.Transform, hcl.Diagnostics) {
				d, _, diags := dropAttr.Get(b.Content)
				return &dropTransform{drop: d}, diags
			}},
		node.Spec{Kind: node.KindSink, Type: "mem", Summary: "test", NewSink: enginetest.Pick[node.Sink](impls)},
		node.Spec{Kind: node.KindSink, Type: "broken", Summary: "test",
			NewSink: func(node.Build) (node.Sink, hcl.Diagnostics) { return brokenSink{}, nil }},
	)
}

func compileReload(t testing.TB, src string, impls map[string]any) (*graph.Graph, hcl.Diagnostics) {
	t.Helper()
	cfg, diags := schema.NewLoader().ParseSource("test.hcl", []byte(src), schema.Options{Environ: []string{}})
	if diags.HasErrors() {
		return nil, diags
	}
	g, d := graph.Compile(cfg, reloadRegistry(impls))
	return g, append(diags, d...)
}

// reloadConfig is a source, a drop transform and a sink m, with knobs.
func reloadConfig(drop, resync string, extra string) string {
	return reloadConfigInput(drop, resync, "input = transform.drop.d", extra)
}

// reloadConfigInput is reloadConfig with the input line of sink m.
func reloadConfigInput(drop, resync, input, extra string) string {
	return fmt.Sprintf(`
source "script" "s" {}
transform "drop" "d" {
  input = source.script.s
  drop  = %q
}
sink "mem" "m" {
  %s
  resync = %q
}
%s`, drop, input, resync, extra)
}

type reloadHarness struct {
	t     *testing.T
	src   *scriptSource
	sink  *strictSink
	impls map[string]any
	rt    *Runtime
	met   *Metrics
	reg   *prometheus.Registry
	rec   *recorder
	stop  context.CancelFunc
	done  chan struct{}
}

func startReload(t *testing.T, config string) *reloadHarness {
	t.Helper()
	return startReloadWith(t, config, nil)
}

// reload compiles config and reloads it, or records the rejection.
func (h *reloadHarness) reload(config string) ReloadRecord {
	h.t.Helper()
	g, diags := compileReload(h.t, config, h.impls)
	if diags.HasErrors() {
		return h.rt.Reject(ReloadRecord{Trigger: "test", Error: "invalid configuration", Diagnostics: []string{diags.Error()}})
	}
	return h.rt.Reload(context.Background(), g, ReloadRecord{Trigger: "test"}, time.Second)
}

func (h *reloadHarness) feed(n int) map[node.Key]cty.Value {
	want := map[node.Key]cty.Value{}
	var recs []node.Record
	for i := range n {
		k := fmt.Sprint("k", i)
		recs = append(recs, node.Record{Key: k, Value: str("v")})
		want[k] = str("v")
	}
	h.send(func(o node.Output) { o.Replace(recs); o.MarkSynced() })
	return want
}

func (h *reloadHarness) send(op func(node.Output)) { h.src.Ops <- op }

func actions(rec ReloadRecord) map[string]graph.Action {
	out := map[string]graph.Action{}
	for _, n := range rec.Nodes {
		out[n.Address] = n.Action
	}
	return out
}

var ctyEqual = cmp.Comparer(func(a, b cty.Value) bool { return a.RawEquals(b) })

// A sink-only change rebuilds the sink on the same target: the source
// keeps running (no second Run: no relist), and the new sink writes and
// deletes nothing, since the target already holds what it wants.
func TestReloadSinkOnlyChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startReload(t, reloadConfig("", "1m", ""))
		want := h.feed(100)
		synctest.Wait()
		h.sink.ResetCounts()
		rec := h.reload(reloadConfig("", "2m", ""))
		synctest.Wait()
		if rec.Result != ReloadApplied || rec.Generation != 2 {
			t.Fatalf("reload = %+v", rec)
		}
		wantActions := map[string]graph.Action{"source.script.s": graph.Kept, "transform.drop.d": graph.Kept, "sink.mem.m": graph.Rebuilt}
		if d := cmp.Diff(wantActions, actions(rec)); d != "" {
			t.Errorf("actions (-want +got):\n%s", d)
		}
		if up, del, _ := h.sink.Counts(); up != 0 || del != 0 {
			t.Errorf("the reload wrote %d updates and %d deletes; want none", up, del)
		}
		runs := h.src.Runs()
		if runs != 1 {
			t.Errorf("source ran %d times; a kept source must not restart", runs)
		}
		// The kept source still feeds the new sink.
		h.send(func(o node.Output) { o.Apply([]node.Delta{node.Upsert("new", str("x"), time.Now())}) })
		synctest.Wait()
		want["new"] = str("x")
		if d := cmp.Diff(want, h.sink.State(), ctyEqual); d != "" {
			t.Errorf("sink state (-want +got):\n%s", d)
		}
		if v := testutil.ToFloat64(h.met.generation); v != 2 {
			t.Errorf("pipeline_config_generation = %v, want 2", v)
		}
		if got := h.sink.violations(); len(got) != 0 {
			t.Errorf("unchanged entries rewritten: %v", got)
		}
	})
}

// A changed transform is recomputed; its sink then changes exactly the
// keys whose desired state changed.
func TestReloadTransformChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startReload(t, reloadConfig("k1", "1m", ""))
		want := h.feed(50)
		synctest.Wait()
		h.sink.ResetCounts()
		rec := h.reload(reloadConfig("k2", "1m", ""))
		synctest.Wait()
		wantActions := map[string]graph.Action{"source.script.s": graph.Kept, "transform.drop.d": graph.Rebuilt, "sink.mem.m": graph.Rebuilt}
		if d := cmp.Diff(wantActions, actions(rec)); d != "" || rec.Result != ReloadApplied {
			t.Fatalf("%s: actions (-want +got):\n%s", rec.Result, d)
		}
		delete(want, "k2")
		if d := cmp.Diff(want, h.sink.State(), ctyEqual); d != "" {
			t.Errorf("sink state (-want +got):\n%s", d)
		}
		if up, del, _ := h.sink.Counts(); up != 1 || del != 1 {
			t.Errorf("the reload wrote %d updates and %d deletes; want 1 (k1) and 1 (k2)", up, del)
		}
	})
}

// A new part that fails to start rolls the reload back: the running graph
// keeps flowing, untouched.
func TestReloadRollback(t *testing.T) {
	tests := []struct {
		name, extra, wantErr string
		unready              bool
	}{
		{"sink fails to open", "sink \"broken\" \"b\" {\n  input = source.script.s\n}", "sink.broken.b: open target: pin path", false},
		{"source fails", "source \"broken\" \"x\" {}\nsink \"mem\" \"n\" {\n  input = source.broken.x\n}", "source.broken.x: failed to start: connection refused", false},
		{"sink never ready", "sink \"mem\" \"n\" {\n  input = source.script.s\n}",
			"sink.mem.n: target not ready: not within the reload timeout (1s): connection refused", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startReload(t, reloadConfig("", "1m", ""))
				want := h.feed(20)
				synctest.Wait()
				h.sink.ResetCounts()
				unready := &unreadySink{MemSink: nodetest.NewMemSink()}
				h.impls["sink.mem.n"] = nodetest.NewMemSink()
				if tt.unready {
					h.impls["sink.mem.n"] = unready
				}
				rec := h.reload(reloadConfig("", "2m", tt.extra))
				synctest.Wait()
				if rec.Result != ReloadRolledBack || !strings.Contains(rec.Error, tt.wantErr) || rec.Generation != 1 {
					t.Fatalf("reload = %s gen %d %q; want rolled back with %q", rec.Result, rec.Generation, rec.Error, tt.wantErr)
				}
				if tt.unready && unready.closed.Load() != 1 {
					t.Errorf("the target that was not ready was closed %d times, want once", unready.closed.Load())
				}
				if up, del, _ := h.sink.Counts(); up != 0 || del != 0 {
					t.Errorf("a rolled back reload wrote %d updates and %d deletes", up, del)
				}
				r := h.rt.Readiness()
				if r.LastReload == nil || r.LastReload.Result != ReloadRolledBack || !strings.Contains(r.LastReload.Error, tt.wantErr) {
					t.Errorf("readiness last reload = %+v", r.LastReload)
				}
				if len(r.Nodes) != 3 {
					t.Errorf("readiness shows %d nodes, want the 3 of the old graph: %+v", len(r.Nodes), r.Nodes)
				}
				h.send(func(o node.Output) { o.Apply([]node.Delta{node.Upsert("after", str("x"), time.Now())}) })
				synctest.Wait()
				want["after"] = str("x")
				if d := cmp.Diff(want, h.sink.State(), ctyEqual); d != "" {
					t.Errorf("old graph stopped flowing (-want +got):\n%s", d)
				}
				if v := testutil.ToFloat64(h.met.reloads.WithLabelValues("rolled_back")); v != 1 {
					t.Errorf("rolled_back reloads = %v", v)
				}
				if v := testutil.ToFloat64(h.met.reloadOK); v != 0 {
					t.Errorf("pipeline_config_last_reload_successful = %v", v)
				}
				// A good reload afterwards applies and clears the error.
				if rec := h.reload(reloadConfig("", "2m", "")); rec.Result != ReloadApplied || rec.Generation != 2 {
					t.Errorf("next reload = %s gen %d %q", rec.Result, rec.Generation, rec.Error)
				}
				if r := h.rt.Readiness(); r.LastReload.Error != "" {
					t.Errorf("error still shown after a good reload: %+v", r.LastReload)
				}
			})
		})
	}
}

// An invalid configuration is rejected: nothing is written, the error is
// in /readyz, the records, the metrics and the audit trail.
func TestReloadRejected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startReload(t, reloadConfig("", "1m", "sink \"mem\" \"audit\" {\n  input = source.script.s\n}"))
		h.feed(10)
		synctest.Wait()
		h.sink.ResetCounts()
		rec := h.reload(reloadConfig("", "1m", "sink \"mem\" \"audit\" {\n  input = source.script.nope\n}"))
		synctest.Wait()
		if rec.Result != ReloadRejected || rec.Generation != 1 || len(rec.Diagnostics) == 0 {
			t.Fatalf("reload = %+v", rec)
		}
		if up, del, _ := h.sink.Counts(); up != 0 || del != 0 {
			t.Errorf("a rejected reload wrote %d updates and %d deletes", up, del)
		}
		if r := h.rt.Readiness(); r.LastReload == nil || r.LastReload.Result != ReloadRejected || !r.Ready {
			t.Errorf("readiness = ready %v, last reload %+v", r.Ready, r.LastReload)
		}
		if got := h.rt.Reloads(); len(got) != 1 || got[0].Result != ReloadRejected {
			t.Errorf("Reloads() = %+v", got)
		}
		if v := testutil.ToFloat64(h.met.reloads.WithLabelValues("rejected")); v != 1 {
			t.Errorf("rejected reloads = %v", v)
		}
		if v := testutil.ToFloat64(h.met.reloadOK); v != 0 {
			t.Errorf("pipeline_config_last_reload_successful = %v", v)
		}
		if d := cmp.Diff([]node.DecisionKind{node.DecisionConfigLoaded, node.DecisionReloadRejected}, h.rec.kinds()); d != "" {
			t.Errorf("audited decisions (-want +got):\n%s", d)
		}
	})
}

// A removed sink keeps its target's entries by default and deletes them
// with on_remove = "clean".
func TestReloadRemovedSink(t *testing.T) {
	tests := []struct {
		mode  string
		prune bool
		want  []string
	}{
		{"keep", true, []string{"k0", "k1", "k2", "k3", "k4"}},
		{"clean", true, []string{}}, // the sink owns the whole target
		{"clean", false, []string{"foreign"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s,prune=%v", tt.mode, tt.prune), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				extra := fmt.Sprintf("sink \"mem\" \"n\" {\n  input = source.script.s\n  prune = %v\n  on_remove = %q\n}", tt.prune, tt.mode)
				n := nodetest.NewMemSink()
				n.Set("foreign", str("x"))
				other := map[string]string{"keep": "clean", "clean": "keep"}[tt.mode]
				h := startReloadWith(t, reloadConfig("", "1m", strings.Replace(extra, tt.mode, other, 1)), map[string]any{"sink.mem.n": n})
				h.feed(5)
				synctest.Wait()
				// Changing on_remove alone keeps the sink running, and the
				// new value is the one the removal follows.
				rec := h.reload(reloadConfig("", "1m", extra))
				if a := actions(rec)["sink.mem.n"]; a != graph.Kept {
					t.Fatalf("changing on_remove alone: %s, want kept", a)
				}
				for _, nd := range rec.Nodes {
					var want []string
					if nd.Address == "sink.mem.n" {
						want = []string{"on_remove"}
					}
					if d := cmp.Diff(want, nd.InPlace); d != "" {
						t.Errorf("%s: applied in place (-want +got):\n%s", nd.Address, d)
					}
				}
				rec = h.reload(reloadConfig("", "1m", ""))
				synctest.Wait()
				if a := actions(rec)["sink.mem.n"]; a != graph.Removed || rec.Result != ReloadApplied {
					t.Fatalf("sink.mem.n: %s (%s)", a, rec.Result)
				}
				if d := cmp.Diff(tt.want, n.Keys()); d != "" {
					t.Errorf("target after removal (-want +got):\n%s", d)
				}
			})
		})
	}
}

func startReloadWith(t *testing.T, config string, extra map[string]any) *reloadHarness {
	t.Helper()
	h := &reloadHarness{t: t, src: newScriptSource(), sink: &strictSink{MemSink: nodetest.NewMemSink()},
		done: make(chan struct{}), reg: prometheus.NewRegistry(), rec: &recorder{MemSink: nodetest.NewMemSink()}}
	h.impls = map[string]any{"source.script.s": h.src, "sink.mem.m": h.sink, "sink.mem.audit": h.rec}
	for k, v := range extra {
		h.impls[k] = v
	}
	return h.run(config)
}

func (h *reloadHarness) run(config string) *reloadHarness {
	t := h.t
	t.Helper()
	g, diags := compileReload(t, config, h.impls)
	if diags.HasErrors() {
		t.Fatalf("compile: %s", diags.Error())
	}
	h.met = NewMetrics(h.reg, "test")
	rt, err := NewRuntime(g, RunOptions{Metrics: h.met})
	if err != nil {
		t.Fatal(err)
	}
	h.rt = rt
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel
	go func() { _ = rt.Run(ctx); close(h.done) }()
	t.Cleanup(func() { h.stop(); <-h.done })
	return h
}

// Reload before Run and after shutdown is refused, never blocks.
func TestReloadNotRunning(t *testing.T) {
	defer goleak.VerifyNone(t)
	h := &reloadHarness{t: t, src: newScriptSource(), sink: &strictSink{MemSink: nodetest.NewMemSink()}}
	h.impls = map[string]any{"source.script.s": h.src, "sink.mem.m": h.sink}
	g, _ := compileReload(t, reloadConfig("", "1m", ""), h.impls)
	rt, err := NewRuntime(g, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	early, cancelEarly := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancelEarly()
	if rec := rt.Reload(early, g, ReloadRecord{}, time.Second); rec.Result != ReloadRejected {
		t.Errorf("reload before Run = %+v", rec)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = rt.Run(ctx); close(done) }()
	cancel()
	<-done
	if rec := rt.Reload(context.Background(), g, ReloadRecord{}, time.Second); rec.Result != ReloadRejected {
		t.Errorf("reload after shutdown = %+v", rec)
	}
}

// TestReloadRandom applies random valid, invalid and failing configurations
// while deltas flow: every sink ends equal to its desired state (no delta
// lost), no unchanged entry is ever rewritten, and no node, subscription,
// goroutine or heap growth is left behind: the live heap after the last
// reload stays within maxHeapGrowth of the heap after the first 100. Sinks
// go from one input to the union of two (fan-in) and back, and between
// conflict rules.
func TestReloadRandom(t *testing.T) {
	defer goleak.VerifyNone(t)
	reloads := 1000
	if testing.Short() {
		reloads = 200
	}
	synctest.Test(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(17, 4))
		n := &strictSink{MemSink: nodetest.NewMemSink()}
		// t is a static source: it holds k1 (a key s may hold too) and
		// keys of its own, and is declared in every configuration.
		held := recs("k1", "t", "t0", "t", "t1", "t")
		ts := newScriptSource()
		ts.Ops <- func(o node.Output) { o.Replace(held); o.MarkSynced() }
		const declT = "source \"script\" \"t\" {}\n"
		h := startReloadWith(t, reloadConfig("", "1m", declT), map[string]any{"sink.mem.n": n, "source.script.t": ts})
		model := map[node.Key]cty.Value{}
		h.send(func(o node.Output) { o.MarkSynced() })
		drop, withN, inM, inN := "", false, 0, 0
		// converged reports whether every sink holds its desired state.
		converged := func(when int) bool {
			passed := map[node.Key]cty.Value{}
			for k, v := range model {
				if k != drop {
					passed[k] = v
				}
			}
			ok := true
			if d := cmp.Diff(randomWant(inM, passed, held), h.sink.State(), ctyEqual); d != "" {
				t.Errorf("after reload %d, sink.mem.m differs from its desired state (-want +got):\n%s", when, d)
				ok = false
			}
			if withN {
				if d := cmp.Diff(randomWant(inN, passed, held), n.State(), ctyEqual); d != "" {
					t.Errorf("after reload %d, sink.mem.n differs from its desired state (-want +got):\n%s", when, d)
					ok = false
				}
			}
			return ok
		}
		results := map[ReloadResult]int{}
		checking := true
		var heapAt100 uint64
		for i := range reloads {
			if i == 100 {
				synctest.Wait()
				heapAt100 = liveHeap()
			}
			batch := randomBatch(rng, model)
			h.send(func(o node.Output) { o.Apply(batch) })
			nextDrop := []string{"", "k1", "k2", "k3"}[rng.IntN(4)]
			resync := []string{"1m", "2m"}[rng.IntN(2)]
			nextInM, nextInN := rng.IntN(len(randomInputs)), rng.IntN(len(randomInputs))
			extra := declT
			nextN := rng.IntN(2) == 0
			if nextN {
				extra += "sink \"mem\" \"n\" {\n  " + randomInputs[nextInN].line + "\n}"
			}
			switch rng.IntN(10) {
			case 0: // invalid
				extra += "\nsink \"mem\" \"x\" {\n  input = source.script.nope\n}"
			case 1: // a new part fails to start
				extra += "\nsink \"broken\" \"b\" {\n  input = source.script.s\n}"
			}
			rec := h.reload(reloadConfigInput(nextDrop, resync, randomInputs[nextInM].line, extra))
			results[rec.Result]++
			if rec.Result == ReloadApplied {
				drop, withN, inM, inN = nextDrop, nextN, nextInM, nextInN
			}
			if rng.IntN(8) == 0 {
				synctest.Wait()
				checking = checking && converged(i) // the first difference only
			}
		}
		synctest.Wait()
		converged(reloads)
		for _, s := range []*strictSink{h.sink, n} {
			if got := s.violations(); len(got) != 0 {
				t.Errorf("unchanged entries rewritten: %d, first %v", len(got), got[0])
			}
		}
		if results[ReloadApplied] == 0 || results[ReloadRejected] == 0 || results[ReloadRolledBack] == 0 {
			t.Errorf("results %v: every outcome should occur", results)
		}
		checkNoLeftovers(t, h.rt)
		heapAtEnd := liveHeap()
		if heapAtEnd > maxHeapGrowth(heapAt100) {
			t.Errorf("live heap grew from %d KiB after 100 reloads to %d KiB after %d (bound %d KiB): something a reload makes is kept",
				heapAt100>>10, heapAtEnd>>10, reloads, maxHeapGrowth(heapAt100)>>10)
		}
		t.Logf("%d reloads: %v; inputs of m %d, of n %d (%v); live heap %d KiB after 100, %d KiB at the end",
			reloads, results, inM, inN, withN, heapAt100>>10, heapAtEnd>>10)
	})
}

// liveHeap returns the bytes of live heap objects after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// maxHeapGrowth is a generous bound on the live heap after many reloads,
// given the heap after the first ones: twice as much plus 4 MiB leaves room
// for noise (test bookkeeping, pools, the GC's timing) but not for anything
// kept per reload.
func maxHeapGrowth(base uint64) uint64 { return 2*base + 4<<20 }

// checkNoLeftovers: the runtime holds exactly the nodes of its graph, and
// each collection exactly one subscription per consumer.
func checkNoLeftovers(t *testing.T, r *Runtime) {
	t.Helper()
	r.mu.RLock()
	defer r.mu.RUnlock()
	nodes, tasks, held, staged := len(r.g.Nodes), 0, 0, 0
	for _, rn := range r.nodes {
		if rn.task != nil {
			tasks++
		}
		if rn.staged {
			staged++
		}
		if rn.fanIn != nil {
			held++
		}
	}
	if len(r.nodes) != nodes || tasks != nodes || staged != 0 {
		t.Errorf("runtime holds %d records, %d tasks, %d staged for %d nodes", len(r.nodes), tasks, staged, nodes)
	}
	consumers := map[*graph.Node]int{}
	unions := 0
	for _, n := range r.g.Nodes {
		for _, in := range n.Inputs { // a union subscribes once to each input
			consumers[in]++
		}
		f := r.nodes[n].fanIn
		if n.FanIn() != (f != nil) {
			t.Errorf("%s has %d inputs and union %v", n.Address, len(n.Inputs), f != nil)
		}
		if f == nil {
			continue
		}
		unions++
		f.out.mu.Lock()
		subs := len(f.out.subs)
		f.out.mu.Unlock()
		if subs != 1 {
			t.Errorf("the union of %s has %d subscriptions for its one consumer", n.Address, subs)
		}
	}
	if held != unions {
		t.Errorf("runtime holds %d unions for %d nodes with fan-in", held, unions)
	}
	for n, rn := range r.nodes {
		c := rn.out
		if c == nil {
			continue
		}
		c.mu.Lock()
		subs := len(c.subs)
		c.mu.Unlock()
		if subs != consumers[n] {
			t.Errorf("%s has %d subscriptions for %d consumers", n.Address, subs, consumers[n])
		}
	}
}

// A rebuilt sink takes its target over from the running one (a pin lock is
// exclusive): the running sink stops first, and when the new one fails to
// open, the running sink starts again on its target, writing nothing.
func TestReloadRebuiltSinkFailsToOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startReload(t, reloadConfig("", "1m", ""))
		want := h.feed(20)
		synctest.Wait()
		h.sink.ResetCounts()
		h.impls["sink.mem.m"] = brokenSink{}
		rec := h.reload(reloadConfig("", "2m", ""))
		h.impls["sink.mem.m"] = h.sink
		synctest.Wait()
		if rec.Result != ReloadRolledBack || !strings.Contains(rec.Error, "sink.mem.m: open target") {
			t.Fatalf("reload = %s %q", rec.Result, rec.Error)
		}
		h.send(func(o node.Output) { o.Apply([]node.Delta{node.Upsert("after", str("x"), time.Now())}) })
		synctest.Wait()
		want["after"] = str("x")
		if d := cmp.Diff(want, h.sink.State(), ctyEqual); d != "" {
			t.Errorf("the old sink does not flow after the rollback (-want +got):\n%s", d)
		}
		if up, del, _ := h.sink.Counts(); up != 1 || del != 0 {
			t.Errorf("%d updates and %d deletes; want only the new key written", up, del)
		}
		if r := h.rt.Readiness(); !r.Ready {
			t.Errorf("not ready after the rollback: %+v", r)
		}
		checkNoLeftovers(t, h.rt)
	})
}
