package engine

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// TestBatchLogDuration: the "batch applied" line gives the time the
// write took, not the time before it started.
func TestBatchLogDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := nodetest.NewMemSink()
		var logs nodetest.LogBuffer
		src := newScriptSource()
		g := mustCompile(t, fmt.Sprintf(chain, true), map[string]any{"source.script.s": src, "sink.mem.m": sink})
		rt, err := NewRuntime(g, RunOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = rt.Run(ctx); close(done) }()
		src.Ops <- func(o node.Output) { o.Replace(nil); o.MarkSynced() }
		synctest.Wait()
		sink.BeforeUpdate = func() { time.Sleep(3 * time.Second) }
		src.Ops <- func(o node.Output) { o.Apply([]node.Delta{node.Upsert("a", str("1"), time.Now())}) }
		time.Sleep(5 * time.Second)
		synctest.Wait()
		var line string
		for l := range strings.Lines(logs.String()) {
			if strings.Contains(l, `msg="batch applied"`) {
				line = l
			}
		}
		if !strings.Contains(line, "duration=3s") {
			t.Errorf("batch log line %q does not give the write's 3 s", line)
		}
		cancel()
		<-done
	})
}
