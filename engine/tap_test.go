package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"
	"go.uber.org/goleak"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// TestTapShowsAppliedDeltas replays what a tap on the sink saw and compares
// it with what the sink's target holds and how often it was written.
func TestTapShowsAppliedDeltas(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	sink := nodetest.NewMemSink()
	h := start(t, true, 0, sink)
	defer h.shutdown()
	sinkTap, err := h.rt.Tap("sink.mem.m", 1024)
	if err != nil {
		t.Fatal(err)
	}
	defer sinkTap.Close()
	srcTap, err := h.rt.Tap("source.script.s", 1024)
	if err != nil {
		t.Fatal(err)
	}
	defer srcTap.Close()
	for i := range 20 {
		h.src.ops <- func(o node.Output) {
			o.Apply([]node.Delta{node.Upsert(fmt.Sprint("k", i%7), cty.NumberIntVal(int64(i)), time.Now())})
		}
	}
	h.src.ops <- func(o node.Output) {
		o.Apply([]node.Delta{node.Remove("k1", time.Now()), node.Remove("missing", time.Now())})
		o.MarkSynced()
	}
	loop := h.rt.sinks[h.rt.g.Node("sink.mem.m")]
	waitFor(t, func() bool { _, ok := sink.State()["k1"]; return !ok && len(sink.State()) == 6 && loop.idle.Load() })

	replayed := map[node.Key]cty.Value{}
	var ups, dels int
	drain(sinkTap, func(ev TapEvent) {
		if ev.Delete {
			dels++
			delete(replayed, ev.Key)
		} else {
			ups++
			replayed[ev.Key] = ev.Value
		}
	})
	if diff := cmp.Diff(sink.State(), replayed, cmp.Comparer(func(a, b cty.Value) bool { return a.RawEquals(b) })); diff != "" {
		t.Errorf("tap replay differs from the sink (-sink +tap):\n%s", diff)
	}
	wantUps, wantDels, _ := sink.Counts()
	if ups != wantUps || dels != wantDels {
		t.Errorf("tap saw %d upserts, %d deletes; the sink applied %d, %d", ups, dels, wantUps, wantDels)
	}
	var srcDeletes []node.Key
	drain(srcTap, func(ev TapEvent) {
		if ev.Delete {
			srcDeletes = append(srcDeletes, ev.Key)
		}
	})
	if diff := cmp.Diff([]node.Key{"k1"}, srcDeletes); diff != "" {
		t.Errorf("source tap deletes (no-op delete of a missing key dropped) (-want +got):\n%s", diff)
	}
	if sinkTap.Dropped() != 0 {
		t.Errorf("dropped %d events with room in the buffer", sinkTap.Dropped())
	}
}

// TestTapDropsWhenFullAndDetaches: a full tap never blocks the pipeline,
// and a closed tap turns the hot-path check off again.
func TestTapDropsWhenFullAndDetaches(t *testing.T) {
	sink := nodetest.NewMemSink()
	h := start(t, true, 0, sink)
	tp, err := h.rt.Tap("source.script.s", 1)
	if err != nil {
		t.Fatal(err)
	}
	h.src.ops <- func(o node.Output) {
		o.Apply([]node.Delta{node.Upsert("a", cty.True, time.Now()), node.Upsert("b", cty.True, time.Now())})
		o.MarkSynced()
	}
	waitFor(t, func() bool { return len(sink.State()) == 2 })
	if tp.Dropped() != 1 {
		t.Errorf("dropped %d, want 1", tp.Dropped())
	}
	hub := h.rt.taps[h.rt.g.Node("source.script.s")]
	if !hub.active() {
		t.Fatal("hub not active with a tap attached")
	}
	tp.Close()
	tp.Close()
	if hub.active() {
		t.Error("hub still active after the tap closed")
	}
	if _, err := h.rt.Tap("sink.mem.nope", 1); err == nil {
		t.Error("tapping an unknown node succeeded")
	}
}

func drain(tp *Tap, f func(TapEvent)) {
	for {
		select {
		case ev := <-tp.C:
			f(ev)
		default:
			return
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
