package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// slowSink writes one entry per millisecond and stops when ctx ends, as a
// large map's first write does.
type slowSink struct{ mem *nodetest.MemSink }

type slowTarget struct{ node.Target }

func (s slowSink) Open(ctx context.Context, env node.Env, mode node.Mode) (node.Target, error) {
	t, err := s.mem.Open(ctx, env, mode)
	return slowTarget{t}, err
}

func (t slowTarget) Update(ctx context.Context, batch []node.Entry) {
	for i := range batch {
		if err := ctx.Err(); err != nil {
			batch[i].Err = err
			continue
		}
		time.Sleep(time.Millisecond)
		t.Target.Update(ctx, batch[i:i+1])
	}
}

// SIGTERM during start-up (the sinks' first write) stops the pipeline at
// once: shutdown drains only sinks that have started, instead of finishing
// the whole first write after the signal.
func TestStopDuringStartup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, mem := newScriptSource(), nodetest.NewMemSink()
		g := mustCompile(t, fmt.Sprintf(chain, true), map[string]any{"source.script.s": src, "sink.mem.m": slowSink{mem}})
		rt, err := NewRuntime(g, RunOptions{Metrics: NewMetrics(prometheus.NewRegistry(), "test")})
		if err != nil {
			t.Fatal(err)
		}
		const n = 20_000 // 20s of writing, more than the drain timeout
		records := make([]node.Record, n)
		for i := range records {
			records[i] = node.Record{Key: fmt.Sprintf("k%05d", i), Value: str("v")}
		}
		src.Ops <- func(o node.Output) { o.Replace(records); o.MarkSynced() }
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = rt.Run(ctx); close(done) }()
		time.Sleep(50 * time.Millisecond)
		signalled := time.Now()
		cancel()
		<-done
		if took := time.Since(signalled); took > time.Second {
			t.Errorf("shutdown took %s after the signal", took)
		}
		if got := len(mem.Keys()); got > n/10 {
			t.Errorf("%d of %d entries written after the signal", got, n)
		}
	})
}

// failingSink cannot open its target.
type failingSink struct{}

func (failingSink) Open(context.Context, node.Env, node.Mode) (node.Target, error) {
	return nil, errors.New("no such map")
}

// /readyz rows: a sink that cannot open is down and not synced; a transform
// that reports no health of its own is healthy once its output syncs.
func TestReadinessRows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newScriptSource()
		g := mustCompile(t, fmt.Sprintf(chain, true), map[string]any{"source.script.s": src, "sink.mem.m": failingSink{}})
		rt, err := NewRuntime(g, RunOptions{Metrics: NewMetrics(prometheus.NewRegistry(), "test")})
		if err != nil {
			t.Fatal(err)
		}
		src.Ops <- func(o node.Output) { o.Replace([]node.Record{{Key: "a", Value: str("1")}}); o.MarkSynced() }
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = rt.Run(ctx); close(done) }()
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		got := map[string]string{}
		for _, n := range rt.Readiness().Nodes {
			got[n.Address] = fmt.Sprintf("%s synced=%v", n.State, n.Synced)
		}
		want := map[string]string{
			"source.script.s":  "healthy synced=true",
			"transform.pass.a": "healthy synced=true",
			"transform.pass.b": "healthy synced=true",
			"sink.mem.m":       "down synced=false",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		cancel()
		<-done
	})
}
