package graceperiod

import (
	"context"
	"fmt"
	"runtime"
	"sync"
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
	t    *Transform
	in   *nodetest.Input
	out  *nodetest.Output
	reg  *prometheus.Registry
	stop func()
}

func build(t *testing.T, delay string) *Transform {
	t.Helper()
	return nodetest.MustBuild(t, Spec(), fmt.Sprintf("input = source.static.x\ndelay = %q", delay), upstream).Transform.(*Transform)
}

// run runs tr on a fresh input and output until stop or the end of the
// test; call it in a synctest bubble.
func run(t *testing.T, tr *Transform, out *nodetest.Output) *rig {
	t.Helper()
	r := &rig{t: tr, in: nodetest.NewInput(16), out: out, reg: prometheus.NewRegistry()}
	env, _ := nodetest.Env(t, r.reg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- tr.Run(ctx, env, r.in, r.out) }()
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(r.stop)
	return r
}

// start runs a grace_period with delay on an empty, synced input.
func start(t *testing.T, delay string) *rig {
	t.Helper()
	r := run(t, build(t, delay), nodetest.NewOutput())
	r.reset()
	return r
}

func up(k string) node.Delta           { return upv(k, "v") }
func upv(k, v string) node.Delta       { return node.Upsert(k, cty.StringVal(v), time.Now()) }
func del(k string) node.Delta          { return node.Remove(k, time.Now()) }
func rec(k, v string) node.Record      { return node.Record{Key: k, Value: cty.StringVal(v)} }
func (r *rig) batches() [][]node.Delta { return r.out.Batches() }
func (r *rig) send(ds ...node.Delta) {
	r.in.Send(node.Event{Deltas: ds, Synced: true})
	synctest.Wait()
}
func (r *rig) reset(rs ...node.Record) {
	r.in.Send(node.Event{Reset: true, Synced: true, Snapshot: rs})
	synctest.Wait()
}
func (r *rig) sleep(d time.Duration)    { time.Sleep(d); synctest.Wait() }
func (r *rig) keys(t *testing.T) string { t.Helper(); return fmt.Sprint(r.out.Keys()) }

func TestDeleteWaitsAndReAddCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, "30s")
		r.send(up("a"), up("b"), up("c"))
		r.send(del("a"), del("b"), del("c"))
		if got := r.keys(t); got != "[a b c]" {
			t.Fatalf("deletes passed at once: %s", got)
		}
		due := time.Now().Add(30 * time.Second)
		want := []PendingDelete{{Key: "a", Due: due}, {Key: "b", Due: due}, {Key: "c", Due: due}}
		if d := cmp.Diff(want, r.t.Pending()); d != "" {
			t.Fatalf("Pending() (-want +got):\n%s", d)
		}
		r.sleep(10 * time.Second)
		n := len(r.batches())
		r.send(up("a"), upv("b", "new")) // re-adds cancel; only b's change passes
		if got := r.batches()[n:]; len(got) != 1 || len(got[0]) != 1 || got[0][0].Key != "b" {
			t.Fatalf("re-add batches: %v", got)
		}
		r.sleep(20*time.Second - time.Nanosecond)
		if got := r.keys(t); got != "[a b c]" {
			t.Fatalf("c deleted early: %s", got)
		}
		r.sleep(time.Nanosecond)
		if got := r.keys(t); got != "[a b]" {
			t.Fatalf("after 30s: %s", got)
		}
		if n := len(r.t.Pending()); n != 0 {
			t.Fatalf("%d deletions still pending", n)
		}
	})
}

// One event may hold several changes of a key (batches queued behind
// each other): each is decided on what the ones before it passed.
func TestChangesOfOneKeyInOneEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, "30s")
		r.send(upv("a", "1"))
		r.send(upv("a", "2"), del("a"), upv("a", "1"), upv("b", "1"), del("b"))
		if got := r.out.State(); len(got) != 2 || !got["a"].RawEquals(cty.StringVal("1")) || !got["b"].RawEquals(cty.StringVal("1")) {
			t.Fatalf("state %v: want a = 1 (the re-add differs from the 2 passed before it) and b, its deletion waiting", got)
		}
		if p := r.t.Pending(); len(p) != 1 || p[0].Key != "b" {
			t.Fatalf("pending %v: want b only", p)
		}
		r.sleep(30 * time.Second)
		if got := r.keys(t); got != "[a]" {
			t.Fatalf("after the wait: %s", got)
		}
	})
}

func TestNewDeleteRestartsWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, "30s")
		r.send(up("a"))
		r.send(del("a"))
		r.sleep(20 * time.Second)
		r.send(del("a")) // restarts: due now at t=50s
		r.sleep(29 * time.Second)
		if got := r.keys(t); got != "[a]" {
			t.Fatalf("deleted before the restarted wait ended: %s", got)
		}
		r.sleep(time.Second)
		if got := r.keys(t); got != "[]" {
			t.Fatalf("not deleted after the restarted wait: %s", got)
		}
	})
}

func TestDueTogetherPassAsOneBatchWithTheirTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, "5s")
		r.send(up("a"), up("b"), up("c"))
		at := time.Now()
		r.send(del("a"), del("b"), del("zzz")) // zzz never passed: ignored
		n := len(r.batches())
		r.sleep(5 * time.Second)
		want := [][]node.Delta{{node.Remove("a", at), node.Remove("b", at)}}
		if d := cmp.Diff(want, r.batches()[n:], cmp.Comparer(func(a, b cty.Value) bool { return a.RawEquals(b) })); d != "" {
			t.Fatalf("(-want +got):\n%s", d)
		}
	})
}

func TestResetMakesMissingKeysPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, "5s")
		r.send(up("a"), up("b"), up("c"))
		r.send(del("c"))
		r.sleep(2 * time.Second)
		r.reset(rec("b", "v2"), rec("c", "v")) // a missing; c back
		st := r.out.State()
		if len(st) != 3 || !st["b"].RawEquals(cty.StringVal("v2")) {
			t.Fatalf("after reset: %v", st)
		}
		if d := cmp.Diff([]PendingDelete{{Key: "a", Due: time.Now().Add(5 * time.Second)}}, r.t.Pending()); d != "" {
			t.Fatalf("Pending() (-want +got):\n%s", d)
		}
		r.sleep(5 * time.Second)
		if got := r.keys(t); got != "[b c]" {
			t.Fatalf("after the delay: %s", got)
		}
	})
}

// TestRestartKeepsState: a restarted Run (same Transform, same output)
// still gives a key missing from its first input state its grace period.
func TestRestartKeepsState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, out := build(t, "5s"), nodetest.NewOutput()
		r := run(t, tr, out)
		r.reset(rec("a", "v"), rec("b", "v"))
		r.stop()
		r = run(t, tr, out)
		r.reset(rec("b", "v"))
		if got := r.keys(t); got != "[a b]" {
			t.Fatalf("a deleted at once after a restart: %s", got)
		}
		r.sleep(5 * time.Second)
		if got := r.keys(t); got != "[b]" {
			t.Fatalf("after the delay: %s", got)
		}
	})
}

func TestSyncedPassesThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := run(t, build(t, "5s"), nodetest.NewOutput())
		r.in.Send(node.Event{Reset: true, Snapshot: []node.Record{rec("a", "v")}})
		synctest.Wait()
		if r.out.Synced() || r.keys(t) != "[a]" {
			t.Fatalf("synced=%v keys=%s", r.out.Synced(), r.keys(t))
		}
		r.in.Send(node.Event{Synced: true})
		synctest.Wait()
		if !r.out.Synced() {
			t.Fatal("synced did not pass through")
		}
	})
}

// TestManyPendingOneTimer holds 100,000 pending deletions: no goroutine or
// timer per deletion, and bounded memory.
func TestManyPendingOneTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, "30s")
		const n = 100_000
		ups := make([]node.Delta, n)
		dels := make([]node.Delta, n)
		for i := range n {
			ups[i], dels[i] = up(fmt.Sprint("10.0.", i/256, ".", i%256)), del(fmt.Sprint("10.0.", i/256, ".", i%256))
		}
		r.send(ups...)
		before := runtime.NumGoroutine()
		heapBefore := heapInUse()
		r.send(dels...)
		perDelete := float64(heapInUse()-heapBefore) / n
		t.Logf("%.0f heap bytes per pending deletion", perDelete)
		if got := len(r.t.Pending()); got != n {
			t.Fatalf("pending = %d, want %d", got, n)
		}
		if got := gauge(t, r.reg); got != n {
			t.Fatalf("pipeline_grace_pending_deletions = %v, want %d", got, n)
		}
		// 100,000 pending deletions share one timer: no goroutine each. The
		// count is the process's, and the runtime's finalizer and cleanup
		// goroutines count while they run (heapInUse collects): allow a few.
		if after := runtime.NumGoroutine(); after > before+4 {
			t.Fatalf("goroutines went from %d to %d with pending deletions", before, after)
		}
		if perDelete > 512 { // loose: other garbage moves this; TestQueueMemory is exact
			t.Fatalf("%.0f bytes per pending deletion; want at most 512", perDelete)
		}
		r.sleep(30 * time.Second)
		if got := len(r.out.Keys()); got != 0 {
			t.Fatalf("%d keys left after the grace period", got)
		}
	})
}

// TestQueueMemory measures the queue alone: one item, one index entry and
// one heap slot per pending deletion (the key's bytes are shared with the
// record).
func TestQueueMemory(t *testing.T) {
	const n = 100_000
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprint("10.0.", i/256, ".", i%256)
	}
	q := newQueue()
	before := heapInUse()
	now := time.Now()
	for i, k := range keys {
		q.schedule(k, now.Add(time.Duration(i%1000)*time.Millisecond), now)
	}
	per := float64(heapInUse()-before) / n
	t.Logf("%.0f heap bytes per pending deletion", per)
	if per > 160 {
		t.Fatalf("%.0f bytes per pending deletion; want at most 160", per)
	}
	if got := len(q.popDue(now.Add(time.Second))); got != n || q.size() != 0 {
		t.Fatalf("popped %d, %d left", got, q.size())
	}
	runtime.KeepAlive(keys)
}

func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

func gauge(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "pipeline_grace_pending_deletions" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("gauge not registered")
	return 0
}

// TestPendingWhileRunning reads Pending from another goroutine while the
// transform schedules and expires deletions (meaningful under -race).
func TestPendingWhileRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, "1s")
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Millisecond):
					_ = r.t.Pending()
				}
			}
		}()
		for i := range 50 {
			k := fmt.Sprint("k", i%7)
			r.send(up(k))
			r.send(del(k))
			r.sleep(100 * time.Millisecond)
		}
		close(stop)
		<-done
	})
}
