package sinkloop

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// braking is a loop run over a MemSink with a deletion brake: its last
// health, its pipeline_sink_deletes_held gauge and what it told Braked.
type braking struct {
	l     *Loop
	in    *feed
	gauge prometheus.Gauge
	stop  func()

	mu      sync.Mutex
	state   node.State
	detail  string
	decided []int
}

func (b *braking) health() (node.State, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state, b.detail
}

func (b *braking) braked() int { return int(testutil.ToFloat64(b.gauge)) }

// runBraking runs a loop with prune, a resync every minute and max_deletes
// m over sink's target, until stop or the test's end.
func runBraking(t *testing.T, sink *nodetest.MemSink, m string) *braking {
	t.Helper()
	b := &braking{gauge: prometheus.NewGauge(prometheus.GaugeOpts{Name: "pipeline_sink_deletes_held"})}
	md, err := node.ParseMaxDeletes(str(m))
	if err != nil {
		t.Fatal(err)
	}
	cfg := nopConfig(Config{Address: "sink.mem.m", Prune: true, Resync: time.Minute, MaxDeletes: md,
		Health: func(st node.State, detail string) { b.mu.Lock(); b.state, b.detail = st, detail; b.mu.Unlock() },
		Braked: func(n int, _ string) { b.mu.Lock(); b.decided = append(b.decided, n); b.mu.Unlock() },
	})
	cfg.Metrics.DeletesBraked = b.gauge
	b.l = New(cfg)
	target, err := sink.Open(context.Background(), node.Env{}, node.ModeRun)
	if err != nil {
		t.Fatal(err)
	}
	b.in = &feed{ready: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = b.l.Run(ctx, target, b.in); close(done) }()
	var once sync.Once
	b.stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(b.stop)
	return b
}

func records(n int, prefix string) []node.Record {
	out := make([]node.Record, n)
	for i := range out {
		out[i] = node.Record{Key: node.Key(fmt.Sprintf("%s%03d", prefix, i)), Value: str("v")}
	}
	return out
}

// TestBrakeHoldsAnEmptiedInput: an input that empties at once deletes
// nothing while upserts go on; the held deletes show in health, the gauge,
// Braked and explain; a resync does not release them, and the input
// wanting most keys back does.
func TestBrakeHoldsAnEmptiedInput(t *testing.T) {
	for _, encoded := range []bool{false, true} {
		t.Run(fmt.Sprint("encoded=", encoded), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sink := nodetest.NewMemSink()
				sink.Encoded = encoded
				b := runBraking(t, sink, "50%")
				all := records(300, "k")
				b.in.send(node.Event{Reset: true, Snapshot: all, Synced: true})
				synctest.Wait()
				if n := len(sink.Keys()); n != 300 {
					t.Fatalf("%d keys written, want 300", n)
				}
				// The input empties, and one new key comes.
				b.in.send(node.Event{Reset: true, Snapshot: []node.Record{{Key: "new", Value: str("v")}}, Synced: true})
				synctest.Wait()
				if _, del, _ := sink.Counts(); del != 0 || len(sink.Keys()) != 301 {
					t.Fatalf("after the input emptied: %d deletes, %d keys; want 0 and 301 (the upsert goes on)", del, len(sink.Keys()))
				}
				st, detail := b.health()
				if st != node.Degraded || !strings.Contains(detail, "300 deletes held by the deletion brake") || !strings.Contains(detail, "max_deletes = 50%") {
					t.Fatalf("health %v %q; want degraded, 300 deletes held", st, detail)
				}
				if b.braked() != 300 {
					t.Fatalf("pipeline_sink_deletes_held = %d, want 300", b.braked())
				}
				e, found, _ := b.l.Explain(context.Background(), "k007")
				if !found || e.Status != "held by the deletion brake" || !strings.Contains(e.Brake, "max_deletes") {
					t.Fatalf("explain k007: %q (%q)", e.Status, e.Brake)
				}
				time.Sleep(61 * time.Second) // a resync reads and holds them again
				synctest.Wait()
				if _, del, _ := sink.Counts(); del != 0 || b.braked() != 300 {
					t.Fatalf("after a resync: %d deletes, %d held; want 0 and 300", del, b.braked())
				}
				// The input recovers but for 20 keys: within the brake.
				b.in.send(node.Event{Reset: true, Snapshot: append(all[20:], node.Record{Key: "new", Value: str("v")}), Synced: true})
				synctest.Wait()
				if _, del, _ := sink.Counts(); del != 20 || len(sink.Keys()) != 281 {
					t.Fatalf("after the input recovered: %d deletes, %d keys; want 20 and 281", del, len(sink.Keys()))
				}
				if st, detail := b.health(); st != node.Healthy || b.braked() != 0 {
					t.Fatalf("after the release: health %v %q, %d held", st, detail, b.braked())
				}
				b.mu.Lock()
				decided := fmt.Sprint(b.decided)
				b.mu.Unlock()
				if decided != "[300 0]" {
					t.Fatalf("Braked told %s, want [300 0] (held once, released once)", decided)
				}
			})
		})
	}
}

// TestBrakeHoldsAgainAfterRestart: a new run over a target the input no
// longer wants computes the brake from the target and the input, and
// holds again; one with a larger max_deletes (a reload that raised it
// rebuilds the sink) applies them.
func TestBrakeHoldsAgainAfterRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := nodetest.NewMemSink()
		for _, r := range records(40, "k") {
			sink.Set(r.Key, r.Value)
		}
		b := runBraking(t, sink, "50%")
		b.in.send(node.Event{Reset: true, Synced: true})
		synctest.Wait()
		if _, del, _ := sink.Counts(); del != 0 || b.braked() != 40 {
			t.Fatalf("restart over an emptied input: %d deletes, %d held; want 0 and 40", del, b.braked())
		}
		b.stop()
		b = runBraking(t, sink, "40")
		b.in.send(node.Event{Reset: true, Synced: true})
		synctest.Wait()
		if n := len(sink.Keys()); n != 0 || b.braked() != 0 {
			t.Fatalf("with max_deletes = 40: %d keys left, %d held; want 0 and 0", n, b.braked())
		}
	})
}

// TestBrakeLetsChurnPass: a rolling replacement of a few keys at a time in
// a sink of hundreds never brakes, nor do deletes within the floor of a
// small sink.
func TestBrakeLetsChurnPass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := nodetest.NewMemSink()
		b := runBraking(t, sink, "10%")
		b.in.send(node.Event{Reset: true, Snapshot: records(300, "a"), Synced: true})
		synctest.Wait()
		for i := range 100 {
			var ds []node.Delta
			for j := range 3 {
				ds = append(ds, node.Remove(node.Key(fmt.Sprintf("a%03d", 3*i+j)), time.Now()),
					node.Upsert(node.Key(fmt.Sprintf("b%03d", 3*i+j)), str("v"), time.Now()))
			}
			b.in.send(node.Event{Deltas: ds})
			synctest.Wait()
			if b.braked() != 0 {
				t.Fatalf("round %d: %d deletes held by churn", i, b.braked())
			}
		}
		if _, del, _ := sink.Counts(); del != 300 || len(sink.Keys()) != 300 {
			t.Fatalf("after the rolling replacement: %d deletes, %d keys; want 300 and 300", del, len(sink.Keys()))
		}
		// A small sink emptied: within the floor.
		b.stop()
		sink = nodetest.NewMemSink()
		b = runBraking(t, sink, "10%")
		b.in.send(node.Event{Reset: true, Snapshot: records(node.MaxDeletesFloor, "c"), Synced: true})
		synctest.Wait()
		b.in.send(node.Event{Reset: true, Synced: true})
		synctest.Wait()
		if st, _ := b.health(); len(sink.Keys()) != 0 || b.braked() != 0 || st != node.Healthy {
			t.Fatalf("a sink of %d emptied: %d keys left, %d held, %v", node.MaxDeletesFloor, len(sink.Keys()), b.braked(), st)
		}
	})
}

// TestBrakeByCount: a count limits the deletes pending at once, with no
// floor; 0 holds every delete.
func TestBrakeByCount(t *testing.T) {
	for _, c := range []struct {
		max        string
		dels, held int
	}{{"5", 5, 0}, {"4", 0, 5}, {"0", 0, 5}, {"100%", 5, 0}} {
		t.Run(c.max, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sink := nodetest.NewMemSink()
				b := runBraking(t, sink, c.max)
				b.in.send(node.Event{Reset: true, Snapshot: records(5, "k"), Synced: true})
				synctest.Wait()
				b.in.send(node.Event{Reset: true, Synced: true})
				synctest.Wait()
				if _, del, _ := sink.Counts(); del != c.dels || b.braked() != c.held {
					t.Fatalf("%d deletes, %d held; want %d and %d", del, b.braked(), c.dels, c.held)
				}
			})
		})
	}
}

// TestBrakeSparesAppendOnly: a target with no actual state appends its
// deletes; the brake does not hold them.
func TestBrakeSparesAppendOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := nodetest.NewMemSink()
		sink.AppendOnly = true
		b := runBraking(t, sink, "0")
		b.in.send(node.Event{Reset: true, Snapshot: records(50, "k"), Synced: true})
		synctest.Wait()
		b.in.send(node.Event{Reset: true, Synced: true})
		synctest.Wait()
		if _, del, _ := sink.Counts(); del != 50 || b.braked() != 0 {
			t.Fatalf("append-only: %d deletes, %d held; want 50 and 0", del, b.braked())
		}
	})
}

// TestBrakeJudgesAWholePass: a full reconcile over more than FullChunk
// keys judges all its deletes together, whichever chunk found them, and
// applies those it lets through in chunks.
func TestBrakeJudgesAWholePass(t *testing.T) {
	for _, c := range []struct {
		max        string
		dels, held int
	}{{"50%", 0, 5000}, {"60%", 5000, 0}} {
		t.Run(c.max, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sink := nodetest.NewMemSink()
				sink.Encoded = true
				all := records(9000, "k")
				for _, r := range all {
					sink.Set(r.Key, r.Value)
				}
				b := runBraking(t, sink, c.max)
				b.in.send(node.Event{Reset: true, Snapshot: all[:4000], Synced: true})
				synctest.Wait()
				if _, del, _ := sink.Counts(); del != c.dels || b.braked() != c.held {
					t.Fatalf("%d deletes, %d held; want %d and %d", del, b.braked(), c.dels, c.held)
				}
			})
		})
	}
}

// TestBrakeCreationsBeforeSync: creations written before the input
// synced do not raise the brake's limit. The target holds 30 keys; the
// input delivers 14 of them and 10 new ones, then syncs: the 16 deletes
// are judged against the 30 entries plan reads (Judge), not the 40 the
// target holds by then, so run holds them as plan shows.
func TestBrakeCreationsBeforeSync(t *testing.T) {
	for _, encoded := range []bool{false, true} {
		t.Run(fmt.Sprint("encoded=", encoded), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sink := nodetest.NewMemSink()
				sink.Encoded = encoded
				old := records(30, "k")
				for _, r := range old {
					sink.Set(r.Key, r.Value)
				}
				md, _ := node.ParseMaxDeletes(str("50%"))
				if _, hold := Judge(md, 30, 16); !hold {
					t.Fatal("plan's judgement: 16 of 30 pass; the test needs them held")
				}
				b := runBraking(t, sink, "50%")
				wanted := append(old[:14:14], records(10, "n")...)
				b.in.send(node.Event{Reset: true, Snapshot: wanted})
				synctest.Wait()
				if n := len(sink.Keys()); n != 40 {
					t.Fatalf("%d keys before the input synced, want 40 (the creations go on)", n)
				}
				b.in.send(node.Event{Synced: true})
				synctest.Wait()
				if _, del, _ := sink.Counts(); del != 0 || b.braked() != 16 {
					t.Fatalf("after the sync: %d deletes, %d held; want 0 and 16, as plan shows", del, b.braked())
				}
				time.Sleep(61 * time.Second) // a resync holds them again
				synctest.Wait()
				if _, del, _ := sink.Counts(); del != 0 || b.braked() != 16 {
					t.Fatalf("after a resync: %d deletes, %d held; want 0 and 16", del, b.braked())
				}
				// The input wants 4 of them back: 12 deletes of 30, within
				// the limit of 15, are applied.
				b.in.send(node.Event{Reset: true, Snapshot: append(wanted, old[14:18]...), Synced: true})
				synctest.Wait()
				if _, del, _ := sink.Counts(); del != 12 || b.braked() != 0 {
					t.Fatalf("after the input recovered: %d deletes, %d held; want 12 and 0", del, b.braked())
				}
			})
		})
	}
}
