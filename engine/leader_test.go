package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// TestLeadershipGatesWrites: a follower writes nothing but keeps its
// desired state; the leader writes; a lead that is not renewed in time
// stops writes without any Lose; a new term starts with a full reconcile
// that repairs what another leader left; Lose stops writes at once.
func TestLeadershipGatesWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := nodetest.NewMemSink()
		src := newScriptSource()
		g := mustCompile(t, fmt.Sprintf(chain, true), map[string]any{"source.script.s": src, "sink.mem.m": sink})
		lead := NewLeadership("me")
		rt, err := NewRuntime(g, RunOptions{Metrics: NewMetrics(prometheus.NewRegistry(), "test"), Leader: lead})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = rt.Run(ctx); close(done) }()
		defer func() { cancel(); <-done }()
		send := func(op func(node.Output)) { src.Ops <- op; synctest.Wait() }
		keys := func(want ...string) {
			t.Helper()
			if want == nil {
				want = []string{}
			}
			if d := cmp.Diff(want, sink.Keys()); d != "" {
				t.Fatalf("target keys (-want +got):\n%s", d)
			}
		}

		send(func(o node.Output) { o.Replace([]node.Record{{Key: "a", Value: str("1")}}); o.MarkSynced() })
		keys()
		r := rt.Readiness()
		if !r.Ready || r.Leader == nil || r.Leader.Leading || r.Leader.Identity != "me" {
			t.Fatalf("follower readiness: %+v", r)
		}
		if st := statusOf(r, "sink.mem.m"); !strings.Contains(st.Detail, "standby") {
			t.Fatalf("follower sink status: %+v", st)
		}

		lead.Lead(time.Now().Add(10 * time.Second))
		synctest.Wait()
		keys("a")
		send(func(o node.Output) { o.Apply([]node.Delta{node.Upsert("b", str("2"), time.Now())}) })
		keys("a", "b")
		if !rt.Readiness().Leader.Leading {
			t.Fatal("readiness does not show leading")
		}

		time.Sleep(11 * time.Second) // the lead was not renewed
		send(func(o node.Output) { o.Apply([]node.Delta{node.Upsert("c", str("3"), time.Now())}) })
		keys("a", "b")

		sink.Set("left-by-other-leader", str("x"))
		lead.Lead(time.Now().Add(10 * time.Second))
		synctest.Wait()
		keys("a", "b", "c")

		lead.Lose()
		send(func(o node.Output) { o.Apply([]node.Delta{node.Upsert("d", str("4"), time.Now())}) })
		keys("a", "b", "c")
		if got := testutil.ToFloat64(lead.terms); got != 2 {
			t.Fatalf("pipeline_leader_terms_total = %v, want 2", got)
		}
		reg := prometheus.NewRegistry()
		reg.MustRegister(lead.Collectors()...)
		if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
			t.Fatalf("lint: %v %v", err, problems)
		}
	})
}

func statusOf(r Readiness, addr string) NodeStatus {
	for _, n := range r.Nodes {
		if n.Address == addr {
			return n
		}
	}
	return NodeStatus{}
}

// TestFollowerStopsWithoutDrainWait: a follower's sinks hold no work, so
// shutdown does not wait out the drain timeout for writes it may not make.
func TestFollowerStopsWithoutDrainWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newScriptSource()
		g := mustCompile(t, fmt.Sprintf(chain, true), map[string]any{"source.script.s": src, "sink.mem.m": nodetest.NewMemSink()})
		rt, err := NewRuntime(g, RunOptions{Leader: NewLeadership("follower")})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = rt.Run(ctx); close(done) }()
		src.Ops <- func(o node.Output) { o.Replace([]node.Record{{Key: "a", Value: str("1")}}); o.MarkSynced() }
		synctest.Wait()
		start := time.Now()
		cancel()
		<-done
		if took := time.Since(start); took >= time.Second {
			t.Fatalf("shutdown took %v: the follower's sink was not idle", took)
		}
	})
}
