package debounce

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"
	"go.uber.org/goleak"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var upstream = &node.Upstream{Address: "source.static.x", Type: node.Records}

type rig struct {
	in  *nodetest.Input
	out *nodetest.Output
	reg *prometheus.Registry
}

// start runs a debounce with body until the test ends; call it in a
// synctest bubble.
func start(t *testing.T, body string) *rig {
	t.Helper()
	tr := nodetest.MustBuild(t, Spec(), "input = source.static.x\n"+body, upstream).Transform.(*Transform)
	r := &rig{in: nodetest.NewInput(1024), out: nodetest.NewOutput(), reg: prometheus.NewRegistry()}
	env, _ := nodetest.Env(t, r.reg)
	nodetest.RunTransform(t, tr, env, r.in, r.out)
	return r
}

func up(k, v string) node.Delta { return node.Upsert(k, cty.StringVal(v), time.Now()) }
func del(k string) node.Delta   { return node.Remove(k, time.Now()) }

// send delivers synced deltas and waits until the transform is idle.
func (r *rig) send(ds ...node.Delta) {
	r.in.Send(node.Event{Deltas: ds, Synced: true})
	synctest.Wait()
}

// ready delivers an empty synced initial state.
func (r *rig) ready() {
	r.in.Send(node.Event{Reset: true, Synced: true})
	synctest.Wait()
}

// newBatches returns the batches published after the first base ones.
func (r *rig) newBatches(base int) [][]node.Delta { return r.out.Batches()[base:] }

// counter reads pipeline_debounce_* samples: name, and op when not "".
func counter(t *testing.T, reg *prometheus.Registry, name, op string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if op == "" || (len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == op) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func TestInitialStatePassesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, `interval = "1s"`)
		r.in.Send(node.Event{Reset: true, Snapshot: []node.Record{{Key: "a", Value: cty.StringVal("1")}}})
		synctest.Wait()
		if d := cmp.Diff([]string{"a"}, r.out.Keys()); d != "" || r.out.Synced() {
			t.Fatalf("the reset must pass at once, unsynced (synced=%v):\n%s", r.out.Synced(), d)
		}
		// Changes during the input's initial sync, then the sync marker.
		r.in.Send(node.Event{Deltas: []node.Delta{up("b", "1")}})
		r.in.Send(node.Event{Deltas: []node.Delta{up("c", "1")}, Synced: true})
		synctest.Wait()
		if d := cmp.Diff([]string{"a", "b", "c"}, r.out.Keys()); d != "" || !r.out.Synced() {
			t.Fatalf("initial state held back (synced=%v):\n%s", r.out.Synced(), d)
		}
	})
}

func TestTrailingEdge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, `interval = "100ms"`)
		r.ready()
		base := len(r.out.Batches())
		r.send(up("a", "1"))
		time.Sleep(99 * time.Millisecond)
		synctest.Wait()
		if n := len(r.newBatches(base)); n != 0 {
			t.Fatalf("flushed %d batches before interval", n)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if n := len(r.newBatches(base)); n != 1 {
			t.Fatalf("flushed %d batches at interval, want 1", n)
		}
	})
}

func TestCoalescesWithinInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, `interval = "100ms"`)
		r.in.Send(node.Event{Reset: true, Synced: true, Snapshot: []node.Record{{Key: "old", Value: cty.StringVal("0")}, {Key: "gone", Value: cty.StringVal("0")}}})
		synctest.Wait()
		base := len(r.out.Batches())
		first := time.Now()
		for i := range 5 {
			r.send(up("a", fmt.Sprint(i)), up("old", fmt.Sprint(i)), del("gone"))
			time.Sleep(50 * time.Millisecond)
		}
		if n := len(r.newBatches(base)); n != 0 {
			t.Fatalf("flushed %d batches while changes kept coming within the interval", n)
		}
		time.Sleep(50 * time.Millisecond)
		synctest.Wait()
		batches := r.newBatches(base)
		if len(batches) != 1 {
			t.Fatalf("want one batch of coalesced deltas, got %v", batches)
		}
		want := []node.Delta{node.Upsert("a", cty.StringVal("4"), first), node.Upsert("old", cty.StringVal("4"), first), node.Remove("gone", first)}
		if d := cmp.Diff(want, batches[0], cmp.Comparer(func(a, b cty.Value) bool { return a.RawEquals(b) })); d != "" {
			t.Fatalf("last value wins, oldest Time kept (-want +got):\n%s", d)
		}
		for op, want := range map[string]float64{"created": 1, "modified": 1, "deleted": 1} {
			if got := counter(t, r.reg, "pipeline_debounce_deltas_total", op); got != want {
				t.Errorf("%s = %v, want %v", op, got, want)
			}
		}
		if got := counter(t, r.reg, "pipeline_debounce_flushes_total", ""); got != 1 {
			t.Errorf("flushes = %v, want 1", got)
		}
	})
}

func TestMaxWaitUnderConstantChurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, "interval = \"100ms\"\nmax_wait = \"1s\"")
		r.ready()
		base := len(r.out.Batches())
		start := time.Now()
		var flushedAt []time.Duration
		for i := 0; time.Since(start) < 3500*time.Millisecond; i++ {
			r.send(up("hot", fmt.Sprint(i)))
			time.Sleep(20 * time.Millisecond)
			synctest.Wait()
			if n := len(r.newBatches(base)); n > len(flushedAt) {
				flushedAt = append(flushedAt, time.Since(start))
			}
		}
		want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second} // every max_wait, although changes never pause for interval
		if d := cmp.Diff(want, flushedAt); d != "" {
			t.Fatalf("constant churn with max_wait 1s: flush times (-want +got):\n%s", d)
		}
	})
}

func TestDefaultMaxWaitIsTenIntervals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, `interval = "10ms"`)
		r.ready()
		base := len(r.out.Batches())
		for i := range 10 { // 90ms of churn: no flush yet
			r.send(up("hot", fmt.Sprint(i)))
			time.Sleep(9 * time.Millisecond)
		}
		synctest.Wait()
		if n := len(r.newBatches(base)); n != 0 {
			t.Fatalf("flushed %d batches within 10 intervals", n)
		}
		r.send(up("hot", "x"))
		time.Sleep(10 * time.Millisecond) // 100ms after the first change
		synctest.Wait()
		if n := len(r.newBatches(base)); n != 1 {
			t.Fatalf("flushed %d batches at 10 intervals, want 1", n)
		}
	})
}

func TestCreateThenDeleteWithinWindowEmitsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, `interval = "100ms"`)
		r.ready()
		base := len(r.out.Batches())
		r.send(up("tmp", "1"), del("tmp"))
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		if n := len(r.newBatches(base)); n != 0 {
			t.Fatalf("emitted %d batches for a key that came and went", n)
		}
		// Deleted then re-created within the window: one upsert, counted modified.
		r.send(up("k", "1"))
		time.Sleep(200 * time.Millisecond)
		r.send(del("k"), up("k", "2"))
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		if got := r.out.State()["k"]; !got.RawEquals(cty.StringVal("2")) {
			t.Fatalf("k = %#v", got)
		}
		if got := counter(t, r.reg, "pipeline_debounce_deltas_total", "modified"); got != 1 {
			t.Fatalf("modified = %v, want 1", got)
		}
	})
}

func TestResetReplacesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, `interval = "1s"`)
		r.in.Send(node.Event{Reset: true, Synced: true, Snapshot: []node.Record{{Key: "a", Value: cty.StringVal("1")}}})
		synctest.Wait()
		r.send(up("b", "1"), del("a"))
		r.in.Send(node.Event{Reset: true, Synced: true, Snapshot: []node.Record{{Key: "a", Value: cty.StringVal("1")}, {Key: "c", Value: cty.StringVal("1")}}})
		synctest.Wait()
		if d := cmp.Diff([]string{"a", "c"}, r.out.Keys()); d != "" {
			t.Fatalf("(-want +got):\n%s", d)
		}
		base := len(r.out.Batches())
		time.Sleep(2 * time.Second) // the superseded pending deltas never come out
		synctest.Wait()
		if got := r.newBatches(base); len(got) != 0 {
			t.Fatalf("pending deltas flushed after the reset: %v", got)
		}
		r.send(del("c")) // c is known as emitted: its delete passes
		time.Sleep(time.Second)
		synctest.Wait()
		if d := cmp.Diff([]string{"a"}, r.out.Keys()); d != "" {
			t.Fatalf("(-want +got):\n%s", d)
		}
	})
}

func TestInvalidConfig(t *testing.T) {
	for _, body := range []string{`interval = "0s"`, "interval = \"1s\"\nmax_wait = \"100ms\"", `interval = "soon"`} {
		if _, diags := nodetest.Build(t, Spec(), "input = source.static.x\n"+body, upstream); !diags.HasErrors() {
			t.Errorf("%s: want an error", body)
		}
	}
	tr := nodetest.MustBuild(t, Spec(), "input = source.static.x", upstream).Transform.(*Transform)
	if tr.interval != 100*time.Millisecond || tr.maxWait != time.Second {
		t.Fatalf("defaults: interval %s, max_wait %s", tr.interval, tr.maxWait)
	}
}
