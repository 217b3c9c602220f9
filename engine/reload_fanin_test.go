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

	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
)

// fanInReloadConfig declares a script source per input and sink m over
// them: input = ... for one, inputs = [...] for several.
func fanInReloadConfig(resync, rule string, inputs ...string) string {
	var b strings.Builder
	refs := make([]string, len(inputs))
	for i, in := range inputs {
		fmt.Fprintf(&b, "source \"script\" %q {}\n", in)
		refs[i] = "source.script." + in
	}
	line := "input = " + refs[0]
	if len(refs) > 1 {
		line = "inputs = [" + strings.Join(refs, ", ") + "]"
	}
	fmt.Fprintf(&b, "sink \"mem\" \"m\" {\n  %s\n  resync = %q\n  %s\n}\n", line, resync, rule)
	return b.String()
}

// fanInReload is a reload harness whose source s is joined by the script
// sources t and u, each queued with its records and synced, so that it
// syncs as soon as a reload starts it.
type fanInReload struct {
	*reloadHarness
	extra map[string]*scriptSource
}

func startFanInReload(t *testing.T, config string, held map[string][]node.Record) *fanInReload {
	t.Helper()
	h := &fanInReload{extra: map[string]*scriptSource{}}
	impls := map[string]any{}
	for name, recs := range held {
		s := newScriptSource()
		s.Ops <- func(o node.Output) { o.Replace(recs); o.MarkSynced() }
		h.extra[name] = s
		impls["source.script."+name] = s
	}
	h.reloadHarness = startReloadWith(t, config, impls)
	return h
}

// union returns the union sink.mem.m consumes now, nil without fan-in.
func (h *fanInReload) union() *fanIn {
	h.rt.mu.RLock()
	defer h.rt.mu.RUnlock()
	return h.rt.nodes[h.rt.g.Node("sink.mem.m")].fanIn
}

func (h *fanInReload) runs(name string) int {
	s := h.src
	if name != "s" {
		s = h.extra[name]
	}
	return s.Runs()
}

func withRecs(want map[node.Key]cty.Value, rs []node.Record) map[node.Key]cty.Value {
	out := map[node.Key]cty.Value{}
	for k, v := range want {
		out[k] = v
	}
	for _, r := range rs {
		if _, ok := out[r.Key]; !ok {
			out[r.Key] = r.Value
		}
	}
	return out
}

// checkFanInReload checks a reload's actions, the sink's state and writes,
// that no unchanged entry was rewritten, and that nothing is left over.
func (h *fanInReload) check(rec ReloadRecord, acts map[string]graph.Action, want map[node.Key]cty.Value, updates, deletes int) {
	t := h.t
	t.Helper()
	if rec.Result != ReloadApplied {
		t.Fatalf("reload = %s %q", rec.Result, rec.Error)
	}
	if d := cmp.Diff(acts, actions(rec)); d != "" {
		t.Errorf("actions (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want, h.sink.State(), ctyEqual); d != "" {
		t.Errorf("sink state (-want +got):\n%s", d)
	}
	if up, del, _ := h.sink.Counts(); up != updates || del != deletes {
		t.Errorf("the reload wrote %d updates and %d deletes; want %d and %d", up, del, updates, deletes)
	}
	if got := h.sink.violations(); len(got) != 0 {
		t.Errorf("unchanged entries rewritten: %v", got)
	}
	checkNoLeftovers(t, h.rt)
	h.sink.ResetCounts()
}

var (
	tRecs = recs("t0", "t", "t1", "t", "t2", "t")
	uRecs = recs("u0", "u", "u1", "u")
)

// A sink attribute that does not touch the union (resync) rebuilds the
// sink only: the sources and the union keep running with their state, and
// the new sink writes nothing.
func TestReloadFanInSinkOnlyChange(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		h := startFanInReload(t, fanInReloadConfig("1m", "", "s", "t"), map[string][]node.Record{"t": tRecs})
		want := withRecs(h.feed(5), tRecs)
		synctest.Wait()
		before := h.union()
		h.sink.ResetCounts()
		rec := h.reload(fanInReloadConfig("2m", "", "s", "t"))
		synctest.Wait()
		h.check(rec, map[string]graph.Action{"source.script.s": graph.Kept, "source.script.t": graph.Kept, "sink.mem.m": graph.Rebuilt}, want, 0, 0)
		if h.union() != before || before == nil {
			t.Errorf("the union was rebuilt; its inputs and rule are unchanged")
		}
		if h.runs("s") != 1 || h.runs("t") != 1 {
			t.Errorf("sources ran %d and %d times; kept sources must not restart", h.runs("s"), h.runs("t"))
		}
		// Both inputs still reach the new sink through the kept union.
		h.send(func(o node.Output) { o.Apply([]node.Delta{node.Upsert("new", str("x"), time.Now())}) })
		h.extra["t"].Ops <- func(o node.Output) { o.Apply([]node.Delta{node.Remove("t0", time.Now())}) }
		synctest.Wait()
		want["new"] = str("x")
		delete(want, "t0")
		if d := cmp.Diff(want, h.sink.State(), ctyEqual); d != "" {
			t.Errorf("after the reload (-want +got):\n%s", d)
		}
	})
}

// Adding an input writes its keys only; removing one deletes the keys only
// it held. Keys that stay are not rewritten, and the kept inputs go on.
func TestReloadFanInInputs(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		held := map[string][]node.Record{"t": tRecs, "u": uRecs}
		h := startFanInReload(t, fanInReloadConfig("1m", "", "s", "t"), held)
		base := h.feed(5)
		synctest.Wait()
		h.sink.ResetCounts()
		before := h.union()

		rec := h.reload(fanInReloadConfig("1m", "", "s", "t", "u"))
		synctest.Wait()
		h.check(rec, map[string]graph.Action{"source.script.s": graph.Kept, "source.script.t": graph.Kept, "source.script.u": graph.Added, "sink.mem.m": graph.Rebuilt},
			withRecs(withRecs(base, tRecs), uRecs), len(uRecs), 0)
		if h.union() == before {
			t.Errorf("the union was kept; its inputs changed")
		}

		rec = h.reload(fanInReloadConfig("1m", "", "s", "u"))
		synctest.Wait()
		h.check(rec, map[string]graph.Action{"source.script.s": graph.Kept, "source.script.t": graph.Removed, "source.script.u": graph.Kept, "sink.mem.m": graph.Rebuilt},
			withRecs(base, uRecs), 0, len(tRecs))
		if h.runs("s") != 1 || h.runs("u") != 1 {
			t.Errorf("sources ran %d and %d times; kept sources must not restart", h.runs("s"), h.runs("u"))
		}
		h.send(func(o node.Output) { o.Apply([]node.Delta{node.Remove("k0", time.Now())}) })
		h.extra["u"].Ops <- func(o node.Output) { o.Apply([]node.Delta{node.Upsert("u2", str("u"), time.Now())}) }
		synctest.Wait()
		want := withRecs(base, append(uRecs, recs("u2", "u")...))
		delete(want, "k0")
		if d := cmp.Diff(want, h.sink.State(), ctyEqual); d != "" {
			t.Errorf("after the reloads (-want +got):\n%s", d)
		}
	})
}

// Changing on_conflict recomputes the union: only the key both inputs
// hold changes.
func TestReloadFanInConflictRule(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		both := append(recs("k1", "t"), tRecs...) // k1 is s's too, with "v"
		h := startFanInReload(t, fanInReloadConfig("1m", `on_conflict = "first"`, "s", "t"), map[string][]node.Record{"t": both})
		want := withRecs(h.feed(5), both)
		synctest.Wait()
		if !want["k1"].RawEquals(str("v")) {
			t.Fatalf("k1 = %#v, want s's value", want["k1"])
		}
		h.sink.ResetCounts()
		rec := h.reload(fanInReloadConfig("1m", `on_conflict = "last"`, "s", "t"))
		synctest.Wait()
		want["k1"] = str("t")
		h.check(rec, map[string]graph.Action{"source.script.s": graph.Kept, "source.script.t": graph.Kept, "sink.mem.m": graph.Rebuilt}, want, 1, 0)
		rec = h.reload(fanInReloadConfig("1m", `merge = join("+", values)`, "s", "t"))
		synctest.Wait()
		want["k1"] = str("v+t")
		h.check(rec, map[string]graph.Action{"source.script.s": graph.Kept, "source.script.t": graph.Kept, "sink.mem.m": graph.Rebuilt}, want, 1, 0)
	})
}

// A plain graph becomes a fan-in and back.
func TestReloadToFanInAndBack(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		h := startFanInReload(t, fanInReloadConfig("1m", "", "s"), map[string][]node.Record{"t": tRecs})
		base := h.feed(5)
		synctest.Wait()
		h.sink.ResetCounts()
		if h.union() != nil {
			t.Fatal("a plain graph has a union")
		}
		rec := h.reload(fanInReloadConfig("1m", "", "s", "t"))
		synctest.Wait()
		h.check(rec, map[string]graph.Action{"source.script.s": graph.Kept, "source.script.t": graph.Added, "sink.mem.m": graph.Rebuilt},
			withRecs(base, tRecs), len(tRecs), 0)
		if h.union() == nil {
			t.Fatal("the fan-in graph has no union")
		}
		rec = h.reload(fanInReloadConfig("1m", "", "s"))
		synctest.Wait()
		h.check(rec, map[string]graph.Action{"source.script.s": graph.Kept, "source.script.t": graph.Removed, "sink.mem.m": graph.Rebuilt}, base, 0, len(tRecs))
		if h.union() != nil {
			t.Error("the union outlived the fan-in")
		}
		h.send(func(o node.Output) { o.Apply([]node.Delta{node.Upsert("after", str("x"), time.Now())}) })
		synctest.Wait()
		base["after"] = str("x")
		if d := cmp.Diff(base, h.sink.State(), ctyEqual); d != "" {
			t.Errorf("after the reloads (-want +got):\n%s", d)
		}
	})
}

// A new input that fails rolls the reload back: the running union goes on.
func TestReloadFanInRollback(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		h := startFanInReload(t, fanInReloadConfig("1m", "", "s", "t"), map[string][]node.Record{"t": tRecs})
		want := withRecs(h.feed(5), tRecs)
		synctest.Wait()
		h.sink.ResetCounts()
		before := h.union()
		bad := strings.Replace(fanInReloadConfig("1m", "", "s", "t"), "source.script.t]", "source.script.t, source.broken.x]", 1) +
			"source \"broken\" \"x\" {}\n"
		rec := h.reload(bad)
		synctest.Wait()
		if rec.Result != ReloadRolledBack || !strings.Contains(rec.Error, "source.broken.x") {
			t.Fatalf("reload = %s %q", rec.Result, rec.Error)
		}
		if h.union() != before {
			t.Error("a rolled back reload replaced the union")
		}
		checkNoLeftovers(t, h.rt)
		h.send(func(o node.Output) { o.Apply([]node.Delta{node.Upsert("after", str("x"), time.Now())}) })
		synctest.Wait()
		want["after"] = str("x")
		if d := cmp.Diff(want, h.sink.State(), ctyEqual); d != "" {
			t.Errorf("the running graph stopped flowing (-want +got):\n%s", d)
		}
		if up, del, _ := h.sink.Counts(); up != 1 || del != 0 {
			t.Errorf("%d updates and %d deletes; want only the new key written", up, del)
		}
	})
}

// A transform with fan-in that is rebuilt (its own attribute changed) takes
// the running union over; its sink changes only the keys that differ.
func TestReloadFanInTransform(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		config := func(drop string) string {
			return strings.Replace(reloadConfig(drop, "1m", "source \"script\" \"t\" {}\n"),
				"input = source.script.s", "inputs = [source.script.s, source.script.t]", 1)
		}
		h := startFanInReload(t, config("k1"), map[string][]node.Record{"t": tRecs})
		want := withRecs(h.feed(5), tRecs)
		synctest.Wait()
		h.sink.ResetCounts()
		d := func() *fanIn {
			h.rt.mu.RLock()
			defer h.rt.mu.RUnlock()
			return h.rt.nodes[h.rt.g.Node("transform.drop.d")].fanIn
		}
		before := d()
		rec := h.reload(config("t0"))
		synctest.Wait()
		delete(want, "t0")
		h.check(rec, map[string]graph.Action{"source.script.s": graph.Kept, "source.script.t": graph.Kept, "transform.drop.d": graph.Rebuilt, "sink.mem.m": graph.Rebuilt},
			want, 1, 1)
		if d() != before || before == nil {
			t.Errorf("the union was rebuilt; its inputs and rule are unchanged")
		}
	})
}

// randomInputs are the inputs a sink of TestReloadRandom may have: the drop
// transform, or the union of it and source t with a rule; tWins says
// whether t's value wins a key both hold.
var randomInputs = []struct {
	line  string
	fanIn bool
	tWins bool
}{
	{line: "input = transform.drop.d"},
	{line: "inputs = [transform.drop.d, source.script.t]\n  on_conflict = \"first\"", fanIn: true},
	{line: "inputs = [transform.drop.d, source.script.t]\n  on_conflict = \"last\"", fanIn: true, tWins: true},
	{line: "inputs = [source.script.t, transform.drop.d]\n  on_conflict = \"first\"", fanIn: true, tWins: true},
}

// randomWant is the desired state of a sink of TestReloadRandom with input
// choice in, given what the drop transform passes on and what t holds.
func randomWant(in int, passed map[node.Key]cty.Value, t []node.Record) map[node.Key]cty.Value {
	want := map[node.Key]cty.Value{}
	for k, v := range passed {
		want[k] = v
	}
	if !randomInputs[in].fanIn {
		return want
	}
	for _, r := range t {
		if _, both := want[r.Key]; !both || randomInputs[in].tWins {
			want[r.Key] = r.Value
		}
	}
	return want
}
