package transforms_test

import (
	"context"
	"testing"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// pipe connects one transform's Output to the next one's Input through a
// channel: Apply and Replace become events (a Replace is a Reset holding the
// whole new state), and the synced marker rides on every event after
// MarkSynced, as it does on the engine's subscriptions. It is a stand-in for
// the engine's collections, enough to chain transforms in tests and
// benchmarks. Like them, it builds packed values (node.PackedVal) for a
// consumer that is not a node.PackedInput. A full channel blocks the
// producer (back-pressure).
type pipe struct {
	ch     chan node.Event
	done   <-chan struct{} // unblocks a producer once the chain stops
	synced bool            // producer side only
	packed bool            // hand values on packed (set before the consumer runs)
}

func newPipe(done <-chan struct{}) *pipe { return &pipe{ch: make(chan node.Event, 64), done: done} }

func (p *pipe) send(ev node.Event) {
	select {
	case p.ch <- ev:
	case <-p.done:
	}
}

func (p *pipe) Apply(ds []node.Delta) { p.send(node.Event{Deltas: ds, Synced: p.synced}) }

func (p *pipe) Replace(rs []node.Record) {
	p.send(node.Event{Reset: true, Snapshot: rs, Synced: p.synced})
}

func (p *pipe) MarkSynced() {
	if !p.synced {
		p.synced = true
		p.send(node.Event{Synced: true})
	}
}

func (p *pipe) Next(ctx context.Context) (node.Event, error) {
	select {
	case ev := <-p.ch:
		if !p.packed {
			for i := range ev.Snapshot {
				ev.Snapshot[i].Value = node.Unpack(ev.Snapshot[i].Value)
			}
			for i := range ev.Deltas {
				ev.Deltas[i].Value = node.Unpack(ev.Deltas[i].Value)
			}
		}
		return ev, nil
	case <-ctx.Done():
		return node.Event{}, ctx.Err()
	}
}

var (
	_ node.Output = (*pipe)(nil)
	_ node.Input  = (*pipe)(nil)
)

// stage is one transform of a chain, built from HCL.
type stage struct {
	spec node.Spec
	body string // inside the block, without input
}

// chain runs stages in a row from a pipe the test feeds to out, until the
// test ends. It returns the pipe to feed.
func chain(tb testing.TB, out node.Output, stages ...stage) *pipe {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	first := newPipe(ctx.Done())
	in := first
	upstream := &node.Upstream{Address: "source.kubernetes.pods", Type: node.Objects}
	done := make(chan error, len(stages))
	for i, s := range stages {
		tr := nodetest.MustBuild(tb, s.spec, "input = "+upstream.Address+"\n"+s.body, upstream).Transform
		var o node.Output = out
		next := newPipe(ctx.Done())
		if i < len(stages)-1 {
			o = next
		}
		env, _ := nodetest.Env(tb, nil)
		_, in.packed = tr.(node.PackedInput)
		go func(in *pipe) { done <- tr.Run(ctx, env, in, o) }(in)
		in = next
		upstream = &node.Upstream{Address: "transform." + s.spec.Type + ".test", Type: node.Records}
	}
	tb.Cleanup(func() {
		cancel()
		for range stages {
			if err := <-done; err != nil {
				tb.Errorf("Run: %v", err)
			}
		}
	})
	return first
}
