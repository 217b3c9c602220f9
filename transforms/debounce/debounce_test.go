package debounce

import (
	"context"
	"fmt"
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
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type rig struct {
	in  *nodetest.Input
	out *nodetest.Output
	reg *prometheus.Registry
}

func start(t *testing.T, body string) *rig {
	t.Helper()
	tr := nodetest.MustBuild(t, Spec(), "input = source.static.x\n"+body,
		&node.Upstream{Address: "source.static.x", Type: node.Records}).(*Transform)
	r := &rig{in: nodetest.NewInput(1024), out: nodetest.NewOutput(), reg: prometheus.NewRegistry()}
	env, _ := nodetest.Env(t, r.reg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = tr.Run(ctx, env, r.in, r.out); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

func up(k, v string) node.Delta { return node.Upsert(k, cty.StringVal(v), time.Now()) }

func (r *rig) send(ds ...node.Delta) { r.in.Send(node.Event{Deltas: ds, Synced: true}) }

func TestInitialStatePassesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, `interval = "1s"`)
		r.in.Send(node.Event{Reset: true, Snapshot: []node.Record{{Key: "a", Value: cty.StringVal("1")}}})
		r.in.Send(node.Event{Deltas: []node.Delta{up("b", "1")}, Synced: true})
		synctest.Wait()
		if d := cmp.Diff([]string{"a", "b"}, r.out.Keys()); d != "" || !r.out.Synced() {
			t.Fatalf("initial state held back (synced=%v):\n%s", r.out.Synced(), d)
		}
	})
}

func TestCoalescesWithinInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, `interval = "100ms"`)
		r.in.Send(node.Event{Reset: true, Synced: true})
		synctest.Wait()
		base := len(r.out.Batches())
		for i := range 5 {
			r.send(up("a", fmt.Sprint(i)), up("b", fmt.Sprint(i)))
			time.Sleep(50 * time.Millisecond)
		}
		synctest.Wait()
		if n := len(r.out.Batches()) - base; n != 0 {
			t.Fatalf("flushed %d batches while changes kept coming within the interval", n)
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		batches := r.out.Batches()[base:]
		if len(batches) != 1 || len(batches[0]) != 2 {
			t.Fatalf("want one batch of 2 coalesced deltas, got %v", batches)
		}
		if !r.out.State()["a"].RawEquals(cty.StringVal("4")) {
			t.Fatalf("last value must win: %v", r.out.State()["a"])
		}
		if got := testutil.ToFloat64(mustCounter(t, r.reg, "created")); got != 2 {
			t.Fatalf("created = %v, want 2", got)
		}
	})
}

func TestMaxWaitUnderConstantChurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, "interval = \"100ms\"\nmax_wait = \"1s\"")
		r.in.Send(node.Event{Reset: true, Synced: true})
		synctest.Wait()
		base := len(r.out.Batches())
		start := time.Now()
		for i := 0; time.Since(start) < 3500*time.Millisecond; i++ {
			r.send(up("hot", fmt.Sprint(i)))
			time.Sleep(20 * time.Millisecond)
		}
		synctest.Wait()
		if n := len(r.out.Batches()) - base; n != 3 {
			t.Fatalf("constant churn for 3.5s with max_wait 1s flushed %d times, want 3", n)
		}
	})
}

func TestCreateThenDeleteWithinWindowEmitsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, `interval = "100ms"`)
		r.in.Send(node.Event{Reset: true, Synced: true})
		synctest.Wait()
		base := len(r.out.Batches())
		r.send(up("tmp", "1"), node.Remove("tmp", time.Now()))
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		if n := len(r.out.Batches()) - base; n != 0 {
			t.Fatalf("emitted %d batches for a key that came and went", n)
		}
	})
}

func TestResetFlushesAndReplaces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, `interval = "1s"`)
		r.in.Send(node.Event{Reset: true, Synced: true, Snapshot: []node.Record{{Key: "a", Value: cty.StringVal("1")}}})
		synctest.Wait()
		r.send(up("b", "1"))
		r.in.Send(node.Event{Reset: true, Synced: true, Snapshot: []node.Record{{Key: "c", Value: cty.StringVal("1")}}})
		synctest.Wait()
		if d := cmp.Diff([]string{"c"}, r.out.Keys()); d != "" {
			t.Fatalf("(-want +got):\n%s", d)
		}
	})
}

func TestInvalidConfig(t *testing.T) {
	up := &node.Upstream{Address: "source.static.x", Type: node.Records}
	for _, body := range []string{`interval = "0s"`, "interval = \"1s\"\nmax_wait = \"100ms\""} {
		if _, diags := nodetest.Build(t, Spec(), "input = source.static.x\n"+body, up); !diags.HasErrors() {
			t.Errorf("%s: want an error", body)
		}
	}
}

func mustCounter(t *testing.T, reg *prometheus.Registry, op string) prometheus.Collector {
	t.Helper()
	return prometheus.CollectorFunc(func(ch chan<- prometheus.Metric) {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "pipeline_debounce_deltas_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "op" && l.GetValue() == op {
						ch <- prometheus.MustNewConstMetric(prometheus.NewDesc("x", "x", nil, nil), prometheus.CounterValue, m.GetCounter().GetValue())
					}
				}
			}
		}
	})
}
