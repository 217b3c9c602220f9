package sinkloop

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// feed is a node.Poller the test sends events into.
type feed struct {
	mu    sync.Mutex
	evs   []node.Event
	ready chan struct{}
}

func (f *feed) send(ev node.Event) {
	f.mu.Lock()
	f.evs = append(f.evs, ev)
	f.mu.Unlock()
	select {
	case f.ready <- struct{}{}:
	default:
	}
}

func (f *feed) Poll() (node.Event, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.evs) == 0 {
		return node.Event{}, false
	}
	ev := f.evs[0]
	f.evs = f.evs[1:]
	return ev, true
}

func (f *feed) Ready() <-chan struct{} { return f.ready }

func (f *feed) Next(ctx context.Context) (node.Event, error) {
	for {
		if ev, ok := f.Poll(); ok {
			return ev, nil
		}
		select {
		case <-f.ready:
		case <-ctx.Done():
			return node.Event{}, ctx.Err()
		}
	}
}

// runLoop runs a loop with prune and a resync every minute over sink's
// target until the test ends, fed by the returned feed.
func runLoop(t *testing.T, sink *nodetest.MemSink) (*Loop, *feed) {
	t.Helper()
	l := New(nopConfig(Config{Address: "sink.mem.m", Prune: true, Resync: time.Minute}))
	target, err := sink.Open(context.Background(), node.Env{}, node.ModeRun)
	if err != nil {
		t.Fatal(err)
	}
	f := &feed{ready: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = l.Run(ctx, target, f); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return l, f
}

// bookkeeping is how the running loop keeps what its target holds: keys
// waiting to be indexed, keys indexed, whether the index is laid out in
// the order of a read, and keys whose actual entry equals the wanted one
// but is a copy of it.
type bookkeeping struct {
	pending, indexed int
	ordered          bool
	copies           int
}

func bookkeepingOf(l *Loop) (b bookkeeping) {
	l.inspect(context.Background(), func(s *state) {
		for ks := range s.keys.states {
			if ks.same() && !ks.actual.shares(ks.want) {
				b.copies++
			}
		}
		if x := s.actual.idx; x != nil {
			b.pending, b.indexed, b.ordered = len(x.pending), x.x.Len(), x.x.Ordered()
		}
	})
	return b
}

func str(s string) cty.Value { return cty.StringVal(s) }

// TestFullReadKnowsActualEntries checks that a full read of a target
// read in chunks (node.Chunked) recognises every actual entry with the
// same bytes (the byte index): entries written by a full pass
// (indexed once the loop is idle), by incremental rounds, and entries
// set while the index held bytes of another length (indexed by the
// first read after those are gone).
func TestFullReadKnowsActualEntries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := nodetest.NewMemSink()
		sink.Encoded = true
		l, in := runLoop(t, sink)
		resync := func(what string, ups, unknown int) {
			t.Helper()
			sink.ResetCounts()
			time.Sleep(61 * time.Second)
			synctest.Wait()
			up, del, reads := sink.Counts()
			if reads != 1 || up != ups || del != 0 || sink.Unknown() != unknown {
				t.Fatalf("%s: %d reads, %d updates, %d deletes, %d entries handed over; want 1, %d, 0, %d",
					what, reads, up, del, sink.Unknown(), ups, unknown)
			}
		}
		// The first entry indexed sets the index's length; the short keys
		// written after it do not fit.
		in.send(node.Event{Reset: true, Snapshot: []node.Record{{Key: "a-much-longer-key", Value: str("v")}}, Synced: true})
		synctest.Wait()
		if b := bookkeepingOf(l); b.pending != 0 || b.indexed != 1 {
			t.Fatalf("idle after the first full pass: %d keys pending, %d indexed; want 0 and 1", b.pending, b.indexed)
		}
		resync("first resync", 0, 0)
		var ds []node.Delta
		for i := range 100 {
			ds = append(ds, node.Upsert(node.Key(fmt.Sprintf("k%03d", i)), str("v"), time.Time{}))
		}
		in.send(node.Event{Deltas: ds, Synced: true})
		synctest.Wait()
		in.send(node.Event{Deltas: []node.Delta{{Key: "a-much-longer-key", Delete: true}}, Synced: true})
		synctest.Wait()
		for round := range 3 {
			resync(fmt.Sprint("resync ", round), 0, 0)
		}
		// The index was laid out by hash; the reads return the entries in
		// another order, which the loop, idle, lays the index out in.
		if !bookkeepingOf(l).ordered {
			t.Fatal("idle after full reads, the loop has not laid its index out in the order of a read")
		}
		sink.Set("k007", str("wrong"))
		sink.Remove("k008")
		resync("after drift", 2, 1) // k007 handed over, k008 missing
		resync("after the repair", 0, 0)
	})
}

// TestRestartKeepsNoCopy checks that a loop started over a target that
// holds what the input wants writes nothing and keeps no copy of the
// actual entries: each shares the memory of the one its key wants.
func TestRestartKeepsNoCopy(t *testing.T) {
	for _, encoded := range []bool{false, true} {
		t.Run(fmt.Sprint("encoded=", encoded), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sink := nodetest.NewMemSink()
				sink.Encoded = encoded
				var recs []node.Record
				for i := range 100 {
					k := fmt.Sprint("k", i)
					sink.Set(k, str("v"))
					recs = append(recs, node.Record{Key: k, Value: str("v")})
				}
				l, in := runLoop(t, sink)
				in.send(node.Event{Reset: true, Snapshot: recs, Synced: true})
				synctest.Wait()
				if up, del, _ := sink.Counts(); up != 0 || del != 0 {
					t.Fatalf("restart over an equal target wrote %d updates, %d deletes", up, del)
				}
				if n := bookkeepingOf(l).copies; n != 0 {
					t.Fatalf("after the restart, %d keys keep a copy of the entry they hold, which is the one they want", n)
				}
			})
		})
	}
}

// switchLeader is a Leader the test switches: it leads in term 1 while
// leading is set.
type switchLeader struct {
	mu      sync.Mutex
	leading bool
	changed chan struct{}
}

func (l *switchLeader) Term() (uint64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return 1, l.leading
}

func (l *switchLeader) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

func (l *switchLeader) set(leading bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leading = leading
	close(l.changed)
	l.changed = make(chan struct{})
}

// TestLeadingAgainLooksAtEveryKey: a follower drops the work the input
// gave it; when it leads again, even in the same term, its full
// reconcile looks at every key, not only those its read found changed,
// and writes what the input changed meanwhile.
func TestLeadingAgainLooksAtEveryKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := nodetest.NewMemSink()
		lead := &switchLeader{leading: true, changed: make(chan struct{})}
		l := New(nopConfig(Config{Address: "sink.mem.m", Prune: true, Leader: lead}))
		target, err := sink.Open(context.Background(), node.Env{}, node.ModeRun)
		if err != nil {
			t.Fatal(err)
		}
		in := &feed{ready: make(chan struct{}, 1)}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = l.Run(ctx, target, in); close(done) }()
		defer func() { cancel(); <-done }()
		in.send(node.Event{Reset: true, Snapshot: []node.Record{{Key: "a", Value: str("1")}, {Key: "b", Value: str("1")}}, Synced: true})
		synctest.Wait()
		lead.set(false)
		synctest.Wait()
		in.send(node.Event{Deltas: []node.Delta{node.Upsert("a", str("2"), time.Time{})}, Synced: true})
		synctest.Wait()
		if v := sink.State()["a"]; !v.RawEquals(str("1")) {
			t.Fatalf("a follower wrote a = %#v", v)
		}
		lead.set(true)
		synctest.Wait()
		if v := sink.State()["a"]; !v.RawEquals(str("2")) {
			t.Fatalf("leading again: a = %#v, want \"2\"", v)
		}
	})
}
