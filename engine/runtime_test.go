package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/zclconf/go-cty/cty"
	"go.uber.org/goleak"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/engine/sinkloop"
	"github.com/pipeline/pipeline/internal/backoff"
)

const chain = `
source "script" "s" {}
transform "pass" "a" { input = source.script.s }
transform "pass" "b" { input = transform.pass.a }
sink "mem" "m" {
  input  = transform.pass.b
  prune  = %v
  resync = "1m"
}
`

type harness struct {
	src  *scriptSource
	sink *nodetest.MemSink
	rt   *Runtime
	met  *Metrics
	stop context.CancelFunc
	done chan struct{}
	once sync.Once
}

func start(t *testing.T, prune bool, queue int, sink *nodetest.MemSink) *harness {
	t.Helper()
	return startAttrs(t, prune, queue, sink, "")
}

// startAttrs is start with more sink attributes (extra, HCL).
func startAttrs(t *testing.T, prune bool, queue int, sink *nodetest.MemSink, extra string) *harness {
	t.Helper()
	h := &harness{src: newScriptSource(), sink: sink, done: make(chan struct{})}
	src := strings.Replace(fmt.Sprintf(chain, prune), `resync = "1m"`, `resync = "1m"`+"\n  "+extra, 1)
	g := mustCompile(t, src, map[string]any{"source.script.s": h.src, "sink.mem.m": sink})
	h.met = NewMetrics(prometheus.NewRegistry(), "test")
	rt, err := NewRuntime(g, RunOptions{QueueLimit: queue, Metrics: h.met})
	if err != nil {
		t.Fatal(err)
	}
	h.rt = rt
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel
	go func() { _ = rt.Run(ctx); close(h.done) }()
	t.Cleanup(h.shutdown)
	return h
}

func (h *harness) send(op func(node.Output)) { h.src.Ops <- op }

// checkWrites compares the sink's pipeline_sink_writes_total series, by
// op/result, with want (a series missing from want must be 0).
func (h *harness) checkWrites(t *testing.T, when string, want map[string]float64) {
	t.Helper()
	for _, op := range []string{"upsert", "delete"} {
		for _, res := range []string{"ok", "error"} {
			got := testutil.ToFloat64(h.met.writes.WithLabelValues("sink.mem.m", op, res))
			if w := want[op+"/"+res]; got != w {
				t.Errorf("%s: %s %s writes counted %v, want %v", when, op, res, got, w)
			}
		}
	}
}

func (h *harness) shutdown() {
	h.once.Do(func() {
		h.stop()
		<-h.done
	})
}

// TestModel drives random changes (bursts that overflow the tiny queues
// included) through source -> pass -> pass -> sink and checks that the
// sink always ends equal to the source's final state, also when writes
// fail now and then. Half the seeds run without the deletion brake
// (max_deletes = "100%"); the others with the default, where the sink may
// end holding more than the source wants, but only keys whose delete the
// brake holds, each counted and shown in /readyz, and applied once the
// input wants enough of them back.
func TestModel(t *testing.T) {
	defer goleak.VerifyNone(t)
	var brakes atomic.Int32
	defer func() {
		if brakes.Load() == 0 {
			t.Errorf("no seed ended with deletes held by the brake")
		}
	}()
	for seed := range 40 {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(seed), 7))
				sink := nodetest.NewMemSink()
				sink.Encoded = seed%2 == 1 // half the seeds compare bytes (node.Chunked)
				for i := range 5 {         // foreign and stale entries
					sink.Set(fmt.Sprintf("k%d", rng.IntN(40)), str(fmt.Sprint("stale", i)))
				}
				// A quarter of the seeds fail every seventh write until the end.
				var flaky atomic.Bool
				var writes atomic.Int64
				flaky.Store(seed%4 >= 2)
				sink.FailKey = func(node.Key) bool { return flaky.Load() && writes.Add(1)%7 == 0 }
				braked := seed%4 == 1 || seed%4 == 2
				extra := `max_deletes = "100%"`
				if braked {
					extra = ""
				}
				h := startAttrs(t, true, 1+rng.IntN(32), sink, extra)
				model := map[node.Key]cty.Value{}
				syncAt := rng.IntN(30)
				for step := range 60 {
					batch := randomBatch(rng, model)
					h.send(func(o node.Output) { o.Apply(batch) })
					if step == syncAt {
						h.send(func(o node.Output) { o.MarkSynced() })
					}
					if rng.IntN(4) == 0 {
						synctest.Wait()
					}
				}
				if braked { // the input empties at once: the brake holds it
					gone := make([]node.Delta, 0, len(model))
					for k := range model {
						gone = append(gone, node.Remove(k, time.Now()))
					}
					clear(model)
					h.send(func(o node.Output) { o.Apply(gone); o.MarkSynced() })
				}
				synctest.Wait()
				if flaky.Swap(false) {
					time.Sleep(time.Minute) // every failed write is retried (backoff is at most 30s)
					synctest.Wait()
				}
				if braked && checkBraked(t, h, model) {
					brakes.Add(1)
				}
				if d := cmp.Diff(model, sink.State(), cmp.Comparer(func(a, b cty.Value) bool { return a.RawEquals(b) })); d != "" {
					t.Fatalf("sink differs from source (-want +got):\n%s", d)
				}
				h.shutdown()
			})
		})
	}
}

// checkBraked checks that the sink holds every key of model with its value
// and, beyond them, only deletes the brake holds: more than its floor,
// counted in pipeline_sink_deletes_held and shown in /readyz. It then
// gives back to the input all but three of them, and model with it: the
// three deletes left are within the brake and applied.
func checkBraked(t *testing.T, h *harness, model map[node.Key]cty.Value) bool {
	t.Helper()
	var held []node.Record
	for k, v := range h.sink.State() {
		if w, ok := model[k]; !ok {
			held = append(held, node.Record{Key: k, Value: v})
		} else if !w.RawEquals(v) {
			t.Fatalf("%s holds %#v, want %#v", k, v, w)
		}
	}
	got := testutil.ToFloat64(h.met.deletesBraked.WithLabelValues("sink.mem.m"))
	if int(got) != len(held) {
		t.Fatalf("pipeline_sink_deletes_held = %v, the sink holds %d keys the input does not want", got, len(held))
	}
	if len(held) == 0 {
		return false
	}
	if len(held) <= node.MaxDeletesFloor {
		t.Fatalf("%d deletes held, within the brake's floor of %d", len(held), node.MaxDeletesFloor)
	}
	st := h.rt.Readiness()
	if st.Ready || !strings.Contains(fmt.Sprint(st), fmt.Sprintf("%d deletes held by the deletion brake", len(held))) {
		t.Fatalf("readiness with %d deletes held: %+v", len(held), st)
	}
	back := held[3:]
	for _, r := range back {
		model[r.Key] = r.Value
	}
	h.send(func(o node.Output) {
		deltas := make([]node.Delta, len(back))
		for i, r := range back {
			deltas[i] = node.Upsert(r.Key, r.Value, time.Now())
		}
		o.Apply(deltas)
	})
	synctest.Wait()
	if got := testutil.ToFloat64(h.met.deletesBraked.WithLabelValues("sink.mem.m")); got != 0 {
		t.Fatalf("pipeline_sink_deletes_held = %v after the input wanted keys back", got)
	}
	if st := h.rt.Readiness(); !st.Ready {
		t.Fatalf("not ready once the held deletes were released: %+v", st)
	}
	return true
}

func randomBatch(rng *rand.Rand, model map[node.Key]cty.Value) []node.Delta {
	n := 1 + rng.IntN(50)
	batch := make([]node.Delta, 0, n)
	for range n {
		k := fmt.Sprintf("k%d", rng.IntN(40))
		if rng.IntN(3) == 0 {
			delete(model, k)
			batch = append(batch, node.Remove(k, time.Now()))
		} else {
			v := str(fmt.Sprint(rng.IntN(5)))
			model[k] = v
			batch = append(batch, node.Upsert(k, v, time.Now()))
		}
	}
	return batch
}

func TestNoDeleteBeforeSync(t *testing.T) {
	for _, prune := range []bool{true, false} {
		t.Run(fmt.Sprint("prune=", prune), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sink := nodetest.NewMemSink()
				sink.Set("foreign", str("x"))
				h := start(t, prune, 0, sink)
				h.send(func(o node.Output) { o.Replace([]node.Record{{Key: "a", Value: str("1")}}) })
				synctest.Wait()
				if d := cmp.Diff([]string{"a", "foreign"}, sink.Keys()); d != "" {
					t.Fatalf("before sync (-want +got):\n%s", d)
				}
				// A delete of a key seen in this run still waits for sync.
				h.send(func(o node.Output) { o.Apply([]node.Delta{node.Remove("a", time.Now())}) })
				synctest.Wait()
				if _, del, _ := sink.Counts(); del != 0 {
					t.Fatalf("deleted %d entries before sync", del)
				}
				h.send(func(o node.Output) { o.MarkSynced() })
				synctest.Wait()
				want := []string{}
				if !prune {
					want = []string{"foreign"}
				}
				if d := cmp.Diff(want, sink.Keys()); d != "" {
					t.Fatalf("after sync (-want +got):\n%s", d)
				}
				if !h.rt.Readiness().Ready {
					t.Fatalf("not ready after sync: %+v", h.rt.Readiness())
				}
				h.shutdown()
			})
		})
	}
}

func TestRestartWritesNothing(t *testing.T) {
	for _, encoded := range []bool{false, true} {
		t.Run(fmt.Sprint("encoded=", encoded), func(t *testing.T) { testRestartWritesNothing(t, encoded) })
	}
}

func testRestartWritesNothing(t *testing.T, encoded bool) {
	synctest.Test(t, func(t *testing.T) {
		sink := nodetest.NewMemSink()
		sink.Encoded = encoded
		var recs []node.Record
		for i := range 100 {
			k := fmt.Sprint("k", i)
			sink.Set(k, str("v"))
			recs = append(recs, node.Record{Key: k, Value: str("v")})
		}
		h := start(t, true, 0, sink)
		h.send(func(o node.Output) { o.Replace(recs); o.MarkSynced() })
		synctest.Wait()
		if up, del, _ := sink.Counts(); up != 0 || del != 0 {
			t.Fatalf("restart over an equal target wrote %d updates, %d deletes", up, del)
		}
		h.shutdown()
	})
}

func TestDriftRepairedAtResync(t *testing.T) {
	for _, encoded := range []bool{false, true} {
		t.Run(fmt.Sprint("encoded=", encoded), func(t *testing.T) { testDriftRepairedAtResync(t, encoded) })
	}
}

func testDriftRepairedAtResync(t *testing.T, encoded bool) {
	synctest.Test(t, func(t *testing.T) {
		sink := nodetest.NewMemSink()
		sink.Encoded = encoded
		h := start(t, true, 0, sink)
		h.send(func(o node.Output) {
			o.Replace([]node.Record{{Key: "a", Value: str("1")}, {Key: "b", Value: str("2")}})
			o.MarkSynced()
		})
		synctest.Wait()
		sink.Remove("a")
		sink.Set("b", str("wrong"))
		sink.Set("intruder", str("x"))
		time.Sleep(61 * time.Second)
		synctest.Wait()
		want := map[node.Key]cty.Value{"a": str("1"), "b": str("2")}
		if d := cmp.Diff(want, sink.State(), cmp.Comparer(func(a, b cty.Value) bool { return a.RawEquals(b) })); d != "" {
			t.Fatalf("after resync (-want +got):\n%s", d)
		}
		if got := testutil.ToFloat64(h.met.drift.WithLabelValues("sink.mem.m")); got != 2 {
			t.Fatalf("drift repaired = %v, want 2 (a missing, b wrong)", got)
		}
		h.shutdown()
	})
}

// TestFailedKeyNoLongerWantedForgotten: a key whose write keeps failing
// and that the input then drops needs nothing more: its failure goes
// (no retry, no failing status, nothing kept for it).
func TestFailedKeyNoLongerWantedForgotten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := nodetest.NewMemSink()
		sink.FailKey = func(k node.Key) bool { return k == "bad" }
		h := start(t, true, 0, sink)
		h.send(func(o node.Output) {
			o.Replace([]node.Record{{Key: "good", Value: str("1")}, {Key: "bad", Value: str("2")}})
			o.MarkSynced()
		})
		synctest.Wait()
		if st := h.rt.Readiness(); st.Ready {
			t.Fatalf("sink with a failing entry reported ready: %+v", st)
		}
		h.send(func(o node.Output) { o.Apply([]node.Delta{node.Remove("bad", time.Now())}) })
		time.Sleep(time.Second) // the retry comes due and finds nothing to do
		synctest.Wait()
		if st := h.rt.Readiness(); !st.Ready {
			t.Fatalf("a key the input dropped still counts as failing: %+v", st)
		}
		if e := h.rt.Explain(context.Background(), "bad"); len(e.Entries) != 0 {
			t.Fatalf("the sink still keeps state for a dropped key: %+v", e.Entries)
		}
		h.shutdown()
	})
}

// TestFailedEntriesRetried runs on a plain target and on one that takes
// Data alone (node.Chunked), whose creations the loop records as held
// before the write and takes back when it fails.
func TestFailedEntriesRetried(t *testing.T) {
	for _, encoded := range []bool{false, true} {
		t.Run(fmt.Sprint("encoded=", encoded), func(t *testing.T) { testFailedEntriesRetried(t, encoded) })
	}
}

// startFailingBad starts the chain over a sink (encoded: written by its
// Data) whose writes of key "bad" fail while failing holds, and syncs
// the input with "gut" and "bad" (of one length: one batch of Data). The
// times of the failed writes go to fails.
func startFailingBad(t *testing.T, encoded bool) (h *harness, sink *nodetest.MemSink, failing *atomic.Bool, fails *writeTimes) {
	sink = nodetest.NewMemSink()
	sink.Encoded = encoded
	failing = new(atomic.Bool)
	failing.Store(true)
	fails = failWrites(sink, func(k node.Key) bool { return k == "bad" && failing.Load() })
	h = start(t, true, 0, sink)
	h.send(func(o node.Output) {
		o.Replace([]node.Record{{Key: "gut", Value: str("1")}, {Key: "bad", Value: str("2")}})
		o.MarkSynced()
	})
	return h, sink, failing, fails
}

// writeTimes are the times of a sink's failed writes.
type writeTimes struct {
	mu sync.Mutex
	at []time.Time
}

// failWrites makes sink's writes of the keys fail says fail, recording
// their times.
func failWrites(sink *nodetest.MemSink, fail func(node.Key) bool) *writeTimes {
	w := &writeTimes{}
	sink.FailKey = func(k node.Key) bool {
		if !fail(k) {
			return false
		}
		w.mu.Lock()
		w.at = append(w.at, time.Now())
		w.mu.Unlock()
		return true
	}
	return w
}

// onSchedule fails t unless the failed writes came at the retry times of
// internal/backoff: the wait before each retry within its step, and
// above half of it (the jitter). It returns how many failed.
func (w *writeTimes) onSchedule(t *testing.T) int {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := 1; i < len(w.at); i++ {
		step, gap := backoff.Default.Step(i-1), w.at[i].Sub(w.at[i-1])
		if gap <= step/2 || gap > step {
			t.Errorf("retry %d came %v after the failure before it; want in (%v, %v]", i, gap, step/2, step)
		}
	}
	return len(w.at)
}

// checkCount fails t unless the sink's pipeline_node_records, and the
// count an encoded target (node.Chunked) was told, are want.
func (h *harness) checkCount(t *testing.T, sink *nodetest.MemSink, encoded bool, want int, when string) {
	t.Helper()
	if got := testutil.ToFloat64(h.met.records.WithLabelValues("sink.mem.m")); int(got) != want {
		t.Errorf("pipeline_node_records %s: %v, want %d", when, got, want)
	}
	if n := sink.ActualCount(); encoded && n != want {
		t.Errorf("target told it holds %d entries %s, want %d", n, when, want)
	}
}

func testFailedEntriesRetried(t *testing.T, encoded bool) {
	synctest.Test(t, func(t *testing.T) {
		h, sink, failing, fails := startFailingBad(t, encoded)
		synctest.Wait()
		if d := cmp.Diff([]string{"gut"}, sink.Keys()); d != "" {
			t.Fatalf("one failed entry must not fail the batch (-want +got):\n%s", d)
		}
		h.checkCount(t, sink, encoded, 1, "right after the write")
		h.checkWrites(t, "after the first write", map[string]float64{"upsert/ok": 1, "upsert/error": 1})
		st := h.rt.Readiness()
		if st.Ready {
			t.Fatalf("sink with failing entries reported ready: %+v", st)
		}
		// The key's status (attempts, last error) is in the sink's detail.
		var detail string
		for _, n := range st.Nodes {
			detail += n.Detail
		}
		if !strings.Contains(detail, "next: bad (attempt 1") || !strings.Contains(detail, "injected failure") {
			t.Errorf("readiness detail %q does not name the failing key, its attempts and error", detail)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		failing.Store(false)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if d := cmp.Diff([]string{"bad", "gut"}, sink.Keys()); d != "" {
			t.Fatalf("after retry (-want +got):\n%s", d)
		}
		h.checkCount(t, sink, encoded, 2, "after the retry")
		h.send(func(o node.Output) { o.Apply([]node.Delta{node.Remove("gut", time.Now())}) })
		synctest.Wait()
		// Failed at 0 and about 0.1, 0.3 and 0.7 s (and perhaps 1 s).
		if n := fails.onSchedule(t); n < 4 || n > 5 {
			t.Errorf("%d failed writes in the first second, want 4 or 5", n)
		}
		h.checkWrites(t, "after the retry and a delete", map[string]float64{"upsert/ok": 2, "upsert/error": float64(len(fails.at)), "delete/ok": 1})
		if !h.rt.Readiness().Ready {
			t.Fatalf("not ready after recovery: %+v", h.rt.Readiness())
		}
		h.shutdown()
	})
}

// TestFailedEntryRetriedOnSchedule: a key whose write failed is written
// again at its retry times, whether the input's sync arrives with its
// snapshot or after the loop wrote the snapshot: the full reconcile at
// sync leaves a key waiting for a retry alone.
func TestFailedEntryRetriedOnSchedule(t *testing.T) {
	for _, encoded := range []bool{false, true} {
		t.Run(fmt.Sprint("encoded=", encoded), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sink := nodetest.NewMemSink()
				sink.Encoded = encoded
				fails := failWrites(sink, func(k node.Key) bool { return k == "bad" })
				h := start(t, true, 0, sink)
				h.send(func(o node.Output) {
					o.Replace([]node.Record{{Key: "gut", Value: str("1")}, {Key: "bad", Value: str("2")}})
				})
				synctest.Wait()
				h.send(func(o node.Output) { o.MarkSynced() })
				synctest.Wait()
				h.checkWrites(t, "after the sync", map[string]float64{"upsert/ok": 1, "upsert/error": 1})
				time.Sleep(time.Second)
				synctest.Wait()
				// Failed at 0 and about 0.1, 0.3 and 0.7 s (and perhaps 1 s),
				// the sync adding no write.
				if n := fails.onSchedule(t); n < 4 || n > 5 {
					t.Errorf("%d failed writes in the first second, want 4 or 5", n)
				}
				h.checkWrites(t, "a second on", map[string]float64{"upsert/ok": 1, "upsert/error": float64(len(fails.at))})
				h.shutdown()
			})
		})
	}
}

// TestFullPassRetriesWaitingKeys: a full reconcile (the resync, every
// minute here) retries a key whose failed write waits for a later retry,
// also when the pass looks only at the keys that may need work.
func TestFullPassRetriesWaitingKeys(t *testing.T) {
	for _, encoded := range []bool{false, true} {
		t.Run(fmt.Sprint("encoded=", encoded), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h, sink, failing, _ := startFailingBad(t, encoded)
				// The retries fail until a resync (every minute) comes
				// before the next retry is due: the resync writes the key.
				start := time.Now()
				for minute := 1; ; minute++ {
					resync := start.Add(time.Duration(minute) * time.Minute)
					time.Sleep(time.Until(resync.Add(-time.Second)))
					synctest.Wait()
					ex := h.rt.Explain(context.Background(), "bad")
					if len(ex.Entries) != 1 || ex.Entries[0].RetryAt.IsZero() {
						t.Fatalf("explain bad: %+v", ex.Entries)
					}
					if ex.Entries[0].RetryAt.After(resync.Add(time.Second)) {
						break
					}
					if minute == 20 {
						t.Fatal("no resync in 20 minutes came a second before a retry")
					}
				}
				failing.Store(false)
				time.Sleep(1500 * time.Millisecond) // the resync
				synctest.Wait()
				if d := cmp.Diff([]string{"bad", "gut"}, sink.Keys()); d != "" {
					t.Fatalf("the resync did not retry the failing key (-want +got):\n%s", d)
				}
				h.shutdown()
			})
		})
	}
}

func TestFailingSourceRestarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := nodetest.NewMemSink()
		src := newScriptSource()
		src.FailFirst = true
		g := mustCompile(t, fmt.Sprintf(chain, true), map[string]any{"source.script.s": src, "sink.mem.m": sink})
		rt, err := NewRuntime(g, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = rt.Run(ctx); close(done) }()
		synctest.Wait()
		src.Ops <- func(o node.Output) { o.Replace([]node.Record{{Key: "a", Value: str("1")}}); o.MarkSynced() }
		time.Sleep(time.Second)
		synctest.Wait()
		if d := cmp.Diff([]string{"a"}, sink.Keys()); d != "" {
			t.Fatalf("(-want +got):\n%s", d)
		}
		runs := src.Runs()
		if runs != 2 {
			t.Fatalf("source ran %d times, want 2", runs)
		}
		cancel()
		<-done
	})
}

func TestSkippedRecordsCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := nodetest.NewMemSink()
		sink.Reject = func(r node.Record) error {
			if r.Key == "bad" {
				return fmt.Errorf("not an IP")
			}
			return nil
		}
		h := start(t, true, 0, sink)
		h.send(func(o node.Output) {
			o.Replace([]node.Record{{Key: "ok", Value: str("1")}, {Key: "bad", Value: str("2")}})
			o.MarkSynced()
		})
		synctest.Wait()
		if d := cmp.Diff([]string{"ok"}, sink.Keys()); d != "" {
			t.Fatalf("(-want +got):\n%s", d)
		}
		if got := testutil.ToFloat64(h.met.skipped.WithLabelValues("sink.mem.m")); got != 1 {
			t.Fatalf("skipped = %v, want 1", got)
		}
		h.shutdown()
	})
}

func TestUnreadableTargetRetriedWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := nodetest.NewMemSink()
		var broken atomic.Bool
		broken.Store(true)
		sink.FailActual = func() error {
			if broken.Load() {
				return fmt.Errorf("target unreachable")
			}
			return nil
		}
		h := start(t, true, 0, sink)
		h.send(func(o node.Output) { o.Replace([]node.Record{{Key: "a", Value: str("1")}}); o.MarkSynced() })
		synctest.Wait()
		if len(sink.Keys()) != 0 || h.rt.Readiness().Ready {
			t.Fatalf("wrote without reading the target, or ready: %v", sink.Keys())
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		// Backoff 100ms, 200ms, ... 6.4s: about 7 attempts in 10s, not hundreds.
		if _, _, r := sink.Counts(); r < 3 || r > 10 {
			t.Fatalf("%d reads of an unreadable target in 10s; want a few, backing off", r)
		}
		broken.Store(false)
		time.Sleep(31 * time.Second)
		synctest.Wait()
		if d := cmp.Diff([]string{"a"}, sink.Keys()); d != "" || !h.rt.Readiness().Ready {
			t.Fatalf("after recovery (-want +got):\n%s", d)
		}
	})
}

// TestSinkReadyOnlyOnceTargetHoldsSyncedInput: a healthy sink whose first
// full write is still in flight is not ready, so a probe (or an agent
// waiting on a hub's /readyz) never sees a half-written target as ready.
func TestSinkReadyOnlyOnceTargetHoldsSyncedInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := nodetest.NewMemSink()
		sink.HealthyOnOpen = true // healthy before it has written anything
		entered, release := make(chan struct{}, 1), make(chan struct{})
		sink.BeforeUpdate = func() {
			select {
			case entered <- struct{}{}:
			default:
			}
			<-release
		}
		h := start(t, true, 0, sink)
		h.send(func(o node.Output) { o.Replace([]node.Record{{Key: "a", Value: str("1")}}); o.MarkSynced() })
		<-entered
		synctest.Wait()
		r := h.rt.Readiness()
		close(release)
		if st := statusOf(r, "sink.mem.m"); r.Ready || st.Ready || st.Synced {
			t.Errorf("ready while the first write is in flight: %+v", r)
		}
		synctest.Wait()
		if r := h.rt.Readiness(); !r.Ready {
			t.Fatalf("not ready after the first full write: %+v", r)
		}
		h.shutdown()
	})
}

// TestFullReconcileInChunks: a full reconcile of more keys than it hands
// the target at once writes exactly the difference, chunk by chunk: the
// missing and wrong entries, the foreign ones deleted, a failing one
// retried, equal ones untouched.
func TestFullReconcileInChunks(t *testing.T) {
	for _, encoded := range []bool{false, true} {
		t.Run(fmt.Sprint("encoded=", encoded), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := 2*sinkloop.FullChunk + sinkloop.FullChunk/2
				sink := nodetest.NewMemSink()
				sink.Encoded = encoded
				var failing atomic.Bool
				failing.Store(true)
				sink.FailKey = func(k node.Key) bool { return k == "k3" && failing.Load() }
				var recs []node.Record
				want := map[node.Key]cty.Value{}
				missing, wrong := 0, 0
				for i := range n {
					k := fmt.Sprint("k", i)
					recs = append(recs, node.Record{Key: k, Value: str("v")})
					want[k] = str("v")
					switch {
					case i%3 == 0:
						missing++
					case i%5 == 0:
						sink.Set(k, str("old"))
						wrong++
					default:
						sink.Set(k, str("v"))
					}
				}
				for i := range sinkloop.FullChunk + 3 {
					sink.Set(fmt.Sprint("foreign", i), str("x"))
				}
				h := start(t, true, 0, sink)
				h.send(func(o node.Output) { o.Replace(recs); o.MarkSynced() })
				synctest.Wait()
				up, del, _ := sink.Counts()
				if up != missing+wrong-1 || del != sinkloop.FullChunk+3 { // k3 (missing) fails
					t.Fatalf("wrote %d and deleted %d, want %d and %d", up, del, missing+wrong-1, sinkloop.FullChunk+3)
				}
				failing.Store(false)
				time.Sleep(time.Second)
				synctest.Wait()
				if d := cmp.Diff(want, sink.State(), cmp.Comparer(func(a, b cty.Value) bool { return a.RawEquals(b) })); d != "" {
					t.Fatalf("sink differs (-want +got):\n%s", d)
				}
				h.checkCount(t, sink, encoded, len(want), "after the retry")
				h.shutdown()
			})
		})
	}
}
