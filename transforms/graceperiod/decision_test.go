package graceperiod

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

type decisions struct {
	mu  sync.Mutex
	got []node.Decision
}

func (d *decisions) all() []node.Decision {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]node.Decision(nil), d.got...)
}

func (d *decisions) Decide(x node.Decision) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, x)
}

// TestGraceDeletionIsADecision: deletions passing after their grace period
// are handed to the engine's decisions, once per expiry batch.
func TestGraceDeletionIsADecision(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := build(t, "30s")
		in, out := nodetest.NewInput(16), nodetest.NewOutput()
		env, _ := nodetest.Env(t, prometheus.NewRegistry())
		dec := &decisions{}
		env.Decisions = dec.Decide
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- tr.Run(ctx, env, in, out) }()
		in.Send(node.Event{Reset: true, Synced: true})
		in.Send(node.Event{Deltas: []node.Delta{up("a"), up("b")}, Synced: true})
		in.Send(node.Event{Deltas: []node.Delta{del("a"), del("b")}, Synced: true})
		synctest.Wait()
		if got := dec.all(); len(got) != 0 {
			t.Fatalf("a decision before the grace period ended: %+v", got)
		}
		time.Sleep(31 * time.Second)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		got := dec.all()
		if len(got) != 1 || got[0].Kind != node.DecisionGraceDeletion || got[0].Attrs["count"] != "2" || got[0].Node != "transform.grace_period.test" {
			t.Fatalf("decisions: %+v", got)
		}
	})
}
