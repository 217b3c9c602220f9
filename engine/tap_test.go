package engine

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"
	"go.uber.org/goleak"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// TestTapShowsAppliedDeltas replays what a tap on the sink saw and compares
// it with what the sink's target holds and how often it was written, for
// a plain target and one written by its Data (whose creations the loop
// otherwise records ahead of the write).
func TestTapShowsAppliedDeltas(t *testing.T) {
	for _, encoded := range []bool{false, true} {
		t.Run(fmt.Sprint("encoded=", encoded), func(t *testing.T) { testTapShowsAppliedDeltas(t, encoded) })
	}
}

func testTapShowsAppliedDeltas(t *testing.T, encoded bool) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	sink := nodetest.NewMemSink()
	sink.Encoded = encoded
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
		h.src.Ops <- func(o node.Output) {
			o.Apply([]node.Delta{node.Upsert(fmt.Sprint("k", i%7), cty.NumberIntVal(int64(i)), time.Now())})
		}
	}
	h.src.Ops <- func(o node.Output) {
		o.Apply([]node.Delta{node.Remove("k1", time.Now()), node.Remove("missing", time.Now())})
		o.MarkSynced()
	}
	loop := h.rt.nodes[h.rt.g.Node("sink.mem.m")].sink
	waitFor(t, func() bool { _, ok := sink.State()["k1"]; return !ok && len(sink.State()) == 6 && loop.Idle() })

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
	h.src.Ops <- func(o node.Output) {
		o.Apply([]node.Delta{node.Upsert("a", cty.True, time.Now()), node.Upsert("b", cty.True, time.Now())})
		o.MarkSynced()
	}
	waitFor(t, func() bool { return len(sink.State()) == 2 })
	if tp.Dropped() != 1 {
		t.Errorf("dropped %d, want 1", tp.Dropped())
	}
	hub := h.rt.nodes[h.rt.g.Node("source.script.s")].out.tap
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

// tapKeys drains tp and returns its events as "+key" and "-key", in order.
func tapKeys(tp *Tap) []string {
	var out []string
	drain(tp, func(ev TapEvent) {
		op := "+"
		if ev.Delete {
			op = "-"
		}
		out = append(out, op+string(ev.Key))
	})
	return out
}

// TestTapFollowsReloads: a tap follows its address through reloads. It
// shows a rebuilt node's deltas from the swap on (and nothing of what the
// new node built while staged, nor of a rolled back one); a node added by a
// reload can be tapped; a tap on a removed node stays open and silent until
// a node comes back at its address.
func TestTapFollowsReloads(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		n := nodetest.NewMemSink()
		h := startReloadWith(t, reloadConfig("k1", "1m", ""), map[string]any{"sink.mem.n": n})
		h.feed(4)
		synctest.Wait()
		dTap, err := h.rt.Tap("transform.drop.d", 1024)
		if err != nil {
			t.Fatal(err)
		}
		defer dTap.Close()
		mTap, err := h.rt.Tap("sink.mem.m", 1024)
		if err != nil {
			t.Fatal(err)
		}
		defer mTap.Close()
		if _, err := h.rt.Tap("sink.mem.n", 1); err == nil {
			t.Fatal("tapped sink.mem.n before a reload added it")
		}

		// Rolled back: nothing of the staged nodes reaches the taps.
		rec := h.reload(reloadConfig("k3", "1m", "sink \"broken\" \"b\" {\n  input = source.script.s\n}"))
		synctest.Wait()
		if rec.Result != ReloadRolledBack {
			t.Fatalf("reload = %s %q; want rolled back", rec.Result, rec.Error)
		}
		if got := append(tapKeys(dTap), tapKeys(mTap)...); len(got) != 0 {
			t.Errorf("taps saw a rolled back reload's staged nodes: %v", got)
		}

		// Rebuilt transform and sink, plus an added sink.
		added := "sink \"mem\" \"n\" {\n  input = transform.drop.d\n}"
		rec = h.reload(reloadConfig("k2", "1m", added))
		if rec.Result != ReloadApplied {
			t.Fatalf("reload = %s %q", rec.Result, rec.Error)
		}
		synctest.Wait()
		if d := cmp.Diff([]string{"+k1", "-k2"}, tapKeys(mTap)); d != "" {
			t.Errorf("tap on the rebuilt sink (-want +got):\n%s", d)
		}
		if got := tapKeys(dTap); len(got) != 0 {
			t.Errorf("tap on the rebuilt transform saw its staged sync: %v", got)
		}
		nTap, err := h.rt.Tap("sink.mem.n", 1024)
		if err != nil {
			t.Fatalf("tap a sink added by a reload: %v", err)
		}
		defer nTap.Close()
		h.send(func(o node.Output) { o.Apply([]node.Delta{node.Upsert("after", str("x"), time.Now())}) })
		synctest.Wait()
		for name, tp := range map[string]*Tap{"transform.drop.d": dTap, "sink.mem.m": mTap, "sink.mem.n": nTap} {
			if d := cmp.Diff([]string{"+after"}, tapKeys(tp)); d != "" {
				t.Errorf("tap on %s after the reload (-want +got):\n%s", name, d)
			}
		}

		// Removed, then added again.
		if rec := h.reload(reloadConfig("k2", "1m", "")); rec.Result != ReloadApplied {
			t.Fatalf("reload = %s %q", rec.Result, rec.Error)
		}
		if _, err := h.rt.Tap("sink.mem.n", 1); err == nil || !strings.Contains(err.Error(), "no such node") {
			t.Errorf("tap a removed node: err = %v", err)
		}
		h.send(func(o node.Output) { o.Apply([]node.Delta{node.Upsert("gone", str("x"), time.Now())}) })
		synctest.Wait()
		if got := tapKeys(nTap); len(got) != 0 {
			t.Errorf("tap on a removed sink saw %v", got)
		}
		if rec := h.reload(reloadConfig("k2", "1m", added)); rec.Result != ReloadApplied {
			t.Fatalf("reload = %s %q", rec.Result, rec.Error)
		}
		synctest.Wait()
		tapKeys(nTap) // the new sink's first reconcile
		h.send(func(o node.Output) { o.Apply([]node.Delta{node.Remove("after", time.Now())}) })
		synctest.Wait()
		if d := cmp.Diff([]string{"-after"}, tapKeys(nTap)); d != "" {
			t.Errorf("tap on a sink added again (-want +got):\n%s", d)
		}
		if mTap.Dropped()+dTap.Dropped()+nTap.Dropped() != 0 {
			t.Error("taps dropped events with room in their buffers")
		}
	})
}

// Hubs of removed addresses are forgotten once no tap waits on them.
func TestTapHubsForgotten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startReloadWith(t, reloadConfig("", "1m", ""), map[string]any{"sink.mem.n": nodetest.NewMemSink()})
		synctest.Wait()
		for range 3 {
			h.reload(reloadConfig("", "1m", "sink \"mem\" \"n\" {\n  input = transform.drop.d\n}"))
			h.reload(reloadConfig("", "1m", "sink \"broken\" \"b\" {\n  input = source.script.s\n}"))
			h.reload(reloadConfig("", "1m", ""))
		}
		synctest.Wait()
		h.rt.mu.RLock()
		defer h.rt.mu.RUnlock()
		if len(h.rt.taps) != len(h.rt.g.Nodes) {
			t.Errorf("%d tap hubs for %d nodes", len(h.rt.taps), len(h.rt.g.Nodes))
		}
	})
}
