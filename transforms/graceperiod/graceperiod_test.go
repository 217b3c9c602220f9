package graceperiod

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"
	"go.uber.org/goleak"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type rig struct {
	t   *Transform
	in  *nodetest.Input
	out *nodetest.Output
}

func start(t *testing.T, delay string) *rig {
	t.Helper()
	tr := nodetest.MustBuild(t, Spec(), fmt.Sprintf("input = source.static.x\ndelay = %q", delay),
		&node.Upstream{Address: "source.static.x", Type: node.Records}).(*Transform)
	r := &rig{t: tr, in: nodetest.NewInput(16), out: nodetest.NewOutput()}
	env, _ := nodetest.Env(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = tr.Run(ctx, env, r.in, r.out); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	r.in.Send(node.Event{Reset: true, Synced: true})
	return r
}

func up(k string) node.Delta  { return node.Upsert(k, cty.StringVal("v"), time.Now()) }
func del(k string) node.Delta { return node.Remove(k, time.Now()) }

func (r *rig) send(ds ...node.Delta) { r.in.Send(node.Event{Deltas: ds, Synced: true}) }

func TestDeleteWaitsAndReAddCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, "30s")
		r.send(up("a"), up("b"))
		synctest.Wait()
		r.send(del("a"), del("b"))
		synctest.Wait()
		if d := cmp.Diff([]string{"a", "b"}, r.out.Keys()); d != "" {
			t.Fatalf("deletes passed at once (-want +got):\n%s", d)
		}
		if got := r.t.Pending(); len(got) != 2 || got[0].Key != "a" {
			t.Fatalf("Pending() = %v", got)
		}
		time.Sleep(10 * time.Second)
		r.send(up("a")) // re-add cancels a's deletion
		synctest.Wait()
		time.Sleep(21 * time.Second)
		synctest.Wait()
		if d := cmp.Diff([]string{"a"}, r.out.Keys()); d != "" {
			t.Fatalf("after 31s (-want +got):\n%s", d)
		}
		if n := len(r.t.Pending()); n != 0 {
			t.Fatalf("%d deletions still pending", n)
		}
	})
}

func TestNewDeleteRestartsWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, "30s")
		r.send(up("a"))
		synctest.Wait()
		r.send(del("a"))
		time.Sleep(20 * time.Second)
		r.send(del("a")) // restarts: due now at t=50s
		synctest.Wait()
		time.Sleep(20 * time.Second) // t=40s
		synctest.Wait()
		if len(r.out.Keys()) != 1 {
			t.Fatal("deleted before the restarted wait ended")
		}
		time.Sleep(11 * time.Second) // t=51s
		synctest.Wait()
		if len(r.out.Keys()) != 0 {
			t.Fatal("not deleted after the restarted wait")
		}
	})
}

func TestResetMakesMissingKeysPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, "5s")
		r.send(up("a"), up("b"))
		synctest.Wait()
		r.in.Send(node.Event{Reset: true, Synced: true, Snapshot: []node.Record{{Key: "b", Value: cty.StringVal("v2")}}})
		synctest.Wait()
		st := r.out.State()
		if len(st) != 2 || !st["b"].RawEquals(cty.StringVal("v2")) {
			t.Fatalf("after reset: %v", st)
		}
		time.Sleep(6 * time.Second)
		synctest.Wait()
		if d := cmp.Diff([]string{"b"}, r.out.Keys()); d != "" {
			t.Fatalf("(-want +got):\n%s", d)
		}
	})
}

// TestManyPendingOneTimer holds 100,000 pending deletions with one timer:
// the goroutine count stays flat.
func TestManyPendingOneTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, "30s")
		const n = 100_000
		ups := make([]node.Delta, n)
		dels := make([]node.Delta, n)
		for i := range n {
			ups[i], dels[i] = up(fmt.Sprint(i)), del(fmt.Sprint(i))
		}
		r.send(ups...)
		synctest.Wait()
		before := runtime.NumGoroutine()
		r.send(dels...)
		synctest.Wait()
		if got := len(r.t.Pending()); got != n {
			t.Fatalf("pending = %d, want %d", got, n)
		}
		if after := runtime.NumGoroutine(); after > before+1 {
			t.Fatalf("goroutines grew from %d to %d with pending deletions", before, after)
		}
		time.Sleep(31 * time.Second)
		synctest.Wait()
		if got := len(r.out.Keys()); got != 0 {
			t.Fatalf("%d keys left after the grace period", got)
		}
	})
}

// TestModel: random upserts and deletes; after the delay passes with no
// more input, the output equals the input state.
func TestModel(t *testing.T) {
	for seed := range 20 {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(seed), 1))
				r := start(t, "3s")
				model := map[string]bool{}
				for range 200 {
					k := fmt.Sprint("k", rng.IntN(20))
					if rng.IntN(3) == 0 {
						if model[k] {
							r.send(del(k))
						}
						delete(model, k)
					} else {
						model[k] = true
						r.send(up(k))
					}
					time.Sleep(time.Duration(rng.IntN(1000)) * time.Millisecond)
				}
				time.Sleep(4 * time.Second)
				synctest.Wait()
				var want []string
				for k := range model {
					want = append(want, k)
				}
				if d := cmp.Diff(want, r.out.Keys(), cmp.Transformer("sort", sortStrings)); d != "" {
					t.Fatalf("(-want +got):\n%s", d)
				}
			})
		})
	}
}

func sortStrings(in []string) []string {
	out := append([]string(nil), in...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
