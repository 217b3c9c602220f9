package engine

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

const auditAndMem = `
source "script" "s" {}
sink "mem" "audit" { input = source.script.s }
sink "mem" "m" {
  input  = source.script.s
  resync = "1m"
}
`

// recorder is a mem sink whose target records the decisions it is handed,
// (wrapped in a gate, it is also a node.Gate the test opens and shuts).
type recorder struct {
	*nodetest.MemSink
	mu   sync.Mutex
	got  []node.Decision
	shut chan struct{}
}

func (r *recorder) Open(ctx context.Context, env node.Env, mode node.Mode) (node.Target, error) {
	t, err := r.MemSink.Open(ctx, env, mode)
	return recordingTarget{t, r}, err
}

func (r *recorder) kinds() []node.DecisionKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []node.DecisionKind
	for _, d := range r.got {
		out = append(out, d.Kind)
	}
	return out
}

type recordingTarget struct {
	node.Target
	r *recorder
}

func (t recordingTarget) RecordDecision(d node.Decision) error {
	t.r.mu.Lock()
	defer t.r.mu.Unlock()
	t.r.got = append(t.r.got, d)
	return nil
}

// gate is a recorder that is also a node.Gate.
type gate struct{ *recorder }

func (g gate) Wait() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.shut
}

func (g gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.shut)
	g.shut = nil
}

func startWith(t *testing.T, audit any, m *nodetest.MemSink) (*harness, *scriptSource) {
	t.Helper()
	h := &harness{src: newScriptSource(), sink: m, done: make(chan struct{})}
	g := mustCompile(t, auditAndMem, map[string]any{"source.script.s": h.src, "sink.mem.audit": audit, "sink.mem.m": m})
	rt, err := NewRuntime(g, RunOptions{Metrics: NewMetrics(prometheus.NewRegistry(), "test")})
	if err != nil {
		t.Fatal(err)
	}
	h.rt = rt
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel
	go func() { _ = rt.Run(ctx); close(h.done) }()
	t.Cleanup(h.shutdown)
	return h, h.src
}

// TestDecisionsReachRecorders: the config loaded before the recorder opened,
// a drift repair and a decision from outside the graph each arrive once, in
// order, with the config generation.
func TestDecisionsReachRecorders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{MemSink: nodetest.NewMemSink()}
		m := nodetest.NewMemSink()
		h, _ := startWith(t, rec, m)
		h.send(func(o node.Output) { o.Replace([]node.Record{{Key: "a", Value: str("1")}}); o.MarkSynced() })
		synctest.Wait()
		m.Set("a", str("changed behind our back"))
		time.Sleep(61 * time.Second) // the periodic full reconcile of sink.mem.m
		synctest.Wait()
		h.rt.dec.Decide(node.Decision{Kind: node.DecisionReloadApplied, Detail: "2 nodes replaced"})
		synctest.Wait()
		want := []node.DecisionKind{node.DecisionConfigLoaded, node.DecisionDriftRepaired, node.DecisionReloadApplied}
		if d := cmp.Diff(want, rec.kinds()); d != "" {
			t.Fatalf("decisions (-want +got):\n%s", d)
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if d := rec.got[1]; d.Node != "sink.mem.m" || d.Attrs["count"] != "1" || d.ConfigGeneration != 1 || d.Time.IsZero() {
			t.Errorf("drift decision: %+v", d)
		}
	})
}

// TestGateMakesOtherSinksWait: while the gate is shut, sink.mem.m writes nothing
// and says why; the gate's own sink goes on; opening it releases the writes.
func TestGateMakesOtherSinksWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := gate{&recorder{MemSink: nodetest.NewMemSink(), shut: make(chan struct{})}}
		m := nodetest.NewMemSink()
		h, _ := startWith(t, g, m)
		h.send(func(o node.Output) { o.Replace([]node.Record{{Key: "a", Value: str("1")}}); o.MarkSynced() })
		synctest.Wait()
		if len(m.Keys()) != 0 || len(g.Keys()) != 1 {
			t.Fatalf("while shut: m holds %v, the gate's sink %v; want nothing and a", m.Keys(), g.Keys())
		}
		var detail string
		for _, n := range h.rt.Readiness().Nodes {
			if n.Address == "sink.mem.m" {
				detail = n.Detail
			}
		}
		if !strings.Contains(detail, "writes wait until sink.mem.audit") {
			t.Errorf("sink.mem.m detail %q does not say its writes wait", detail)
		}
		g.open()
		synctest.Wait()
		if d := cmp.Diff([]string{"a"}, m.Keys()); d != "" {
			t.Fatalf("after the gate opened (-want +got):\n%s", d)
		}
	})
}

// TestShutdownWhileGatedWritesNothing: a sink waiting on a shut gate when the
// runtime stops gives up its writes instead of making them unaudited.
func TestShutdownWhileGatedWritesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := gate{&recorder{MemSink: nodetest.NewMemSink(), shut: make(chan struct{})}}
		m := nodetest.NewMemSink()
		h, _ := startWith(t, g, m)
		h.send(func(o node.Output) { o.Replace([]node.Record{{Key: "a", Value: str("1")}}); o.MarkSynced() })
		synctest.Wait()
		h.shutdown()
		if updates, _, _ := m.Counts(); updates != 0 {
			t.Fatalf("the waiting sink wrote %d entries at shutdown", updates)
		}
	})
}
