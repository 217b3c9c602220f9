package sinkloop

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/prometheus/client_golang/prometheus"
)

// TestKeyStore checks the store against a plain map through random adds
// and removes, some of them made while a pass visits every key: each pass
// sees every key stored before it exactly once, a removed slot is reused,
// and the slabs go when the store empties.
func TestKeyStore(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	st := newKeyStore()
	want := map[node.Key]bool{}
	check := func() {
		t.Helper()
		if st.len() != len(want) {
			t.Fatalf("len %d, want %d", st.len(), len(want))
		}
		var seen []node.Key
		for ks := range st.states {
			seen = append(seen, ks.key)
		}
		slices.Sort(seen)
		if len(slices.Compact(seen)) != len(want) {
			t.Fatalf("a pass saw %d distinct keys, want %d", len(seen), len(want))
		}
		for _, k := range seen {
			if !want[k] || st.get(k) == nil || st.get(k).key != k {
				t.Fatalf("key %q: stored %v, found %v", k, want[k], st.get(k))
			}
		}
	}
	for round := range 200 {
		for range rng.IntN(3 * keySlab) {
			k := node.Key(fmt.Sprint(rng.IntN(4 * keySlab)))
			if want[k] {
				continue
			}
			st.add(k)
			want[k] = true
		}
		check()
		// Remove some keys during a pass, add others: every key stored
		// before the pass is visited once, removed or not.
		before := maps.Clone(want)
		visited := map[node.Key]int{}
		for ks := range st.states {
			visited[ks.key]++
			if rng.IntN(2) == 0 {
				delete(want, ks.key)
				st.remove(ks)
			}
			if rng.IntN(10) == 0 {
				k := node.Key(fmt.Sprint("new", round, rng.IntN(1000)))
				if !want[k] {
					st.add(k)
					want[k] = true
				}
			}
		}
		for k := range before {
			if visited[k] != 1 {
				t.Fatalf("key %q visited %d times by a pass that removed keys", k, visited[k])
			}
		}
		check()
		// Remove other keys during a pass, some visited already, some not:
		// a key removed before its turn is not visited, every other key
		// stored at the start is visited once.
		before = maps.Clone(want)
		visited = map[node.Key]int{}
		removedEarly := map[node.Key]bool{}
		for ks := range st.states {
			visited[ks.key]++
			for k := range want {
				if rng.IntN(8) == 0 && k != ks.key {
					if visited[k] == 0 {
						removedEarly[k] = true
					}
					delete(want, k)
					st.remove(st.get(k))
				}
				break
			}
		}
		for k := range before {
			if w := map[bool]int{true: 0, false: 1}[removedEarly[k]]; visited[k] != w {
				t.Fatalf("key %q visited %d times, want %d (removed before its turn: %v)", k, visited[k], w, removedEarly[k])
			}
		}
		check()
		if round%50 == 49 { // empty it
			for ks := range st.states {
				delete(want, ks.key)
				st.remove(ks)
			}
			check()
			if st.slabs != nil || st.free != nil {
				t.Fatalf("an empty store keeps %d slabs and %d free slots", len(st.slabs), len(st.free))
			}
		}
	}
	slots := 0
	for _, s := range st.slabs {
		slots += len(s)
	}
	if slots > len(want)+4*keySlab+keySlab {
		t.Fatalf("%d slots for %d keys: freed slots are not reused", slots, len(want))
	}
}

// TestStamp checks the change times a key state keeps as 8-byte stamps:
// the elapsed time comes back from the monotonic clock, a time before
// the stamps' origin (a test's fake clock's) keeps its order, and the
// zero time is no stamp.
func TestStamp(t *testing.T) {
	if stamp(time.Time{}) != 0 {
		t.Fatal("the zero time must be no stamp")
	}
	if d := since(stamp(time.Now().Add(-5 * time.Millisecond))); d < 5*time.Millisecond || d > time.Second {
		t.Fatalf("a change 5 ms ago: since = %v", d)
	}
	old, older := time.Date(2000, 1, 1, 0, 0, 1, 0, time.UTC), time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	if a, b := stamp(old), stamp(older); a == 0 || b == 0 || b >= a {
		t.Fatalf("stamps before the origin: %d for a time, %d for a second earlier", a, b)
	}
	if d := since(stamp(old)); d < time.Since(old)-time.Second || d > time.Since(old)+time.Second {
		t.Fatalf("since a time before the origin: %v, want about %v", d, time.Since(old))
	}
}

// TestSteps checks the presence table against what each event means: a
// read keeps what the loop knew of a key in the target, a write makes it
// the loop's, a drop forgets it, and the index changes only whether its
// bytes are indexed.
func TestSteps(t *testing.T) {
	type facts struct{ inTarget, written, indexed bool }
	of := func(h presence) facts {
		ks := keyState{at: h}
		return facts{ks.inTarget(), ks.written(), ks.indexed()}
	}
	for h := absent; h <= wroteIndexed; h++ {
		was := of(h)
		want := map[event]facts{
			onRead:    {true, was.written, was.indexed},
			onWrite:   {true, true, was.indexed},
			onDrop:    {},
			onIndex:   {was.inTarget, was.written, was.inTarget},
			onUnindex: {was.inTarget, was.written, false},
		}
		for ev, w := range want {
			if got := of(steps[h][ev]); got != w {
				t.Errorf("presence %d, event %d: %+v, want %+v", h, ev, got, w)
			}
		}
		if steps[free][onRead] != free || steps[h][onDrop] != absent {
			t.Errorf("presence %d: a free slot must stay free, a drop must leave absent", h)
		}
	}
}

// nopConfig is cfg with a func that does nothing, and a series nobody
// reads, wherever cfg leaves one out.
func nopConfig(cfg Config) Config {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics.WriteOK == nil {
		c, o := prometheus.NewCounter(prometheus.CounterOpts{Name: "unread"}), prometheus.NewHistogram(prometheus.HistogramOpts{Name: "unread"})
		cfg.Metrics = Metrics{c, c, c, c, o, o, c, c, nil}
	}
	if cfg.Health == nil {
		cfg.Health = func(node.State, string) {}
	}
	if cfg.Settled == nil {
		cfg.Settled = func() {}
	}
	if cfg.Gates == nil {
		cfg.Gates = func(context.Context, int) bool { return true }
	}
	if cfg.Drift == nil {
		cfg.Drift = func(int) {}
	}
	if cfg.Tapping == nil {
		cfg.Tapping = func() bool { return false }
	}
	if cfg.Started == nil {
		cfg.Started = func() {}
	}
	if cfg.Actual == nil {
		cfg.Actual = func(int) {}
	}
	return cfg
}
