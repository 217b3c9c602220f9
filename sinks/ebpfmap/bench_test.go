package ebpfmap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/internal/heldindex"
)

const benchN = 100_000

// fullChunk is the engine's: the most entries a full reconcile hands the
// target at once.
const fullChunk = 4096

func benchRecords() []node.Record {
	recs := make([]node.Record, benchN)
	for i := range recs {
		recs[i] = node.Record{Key: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), Value: cty.EmptyObjectVal}
	}
	return recs
}

// benchState is a pinned hash map, 100,000 prepared entries, and the same
// keys and values pre-encoded for the raw floor.
type benchState struct {
	tg      *Target
	entries []node.Entry
	// desired finds a key's state in keys, which a full pass walks in
	// order, as the sink loop's keyStore does; idx finds a held key by
	// its bytes, as the sink loop's heldIdx does (a key's reference is its
	// position in keys), and unindexed counts the held keys it lacks.
	desired    map[node.Key]*benchKey
	keys       []benchKey
	idx        *heldindex.Index
	unindexed  int
	pending    []uint32
	rawK, rawV any // [][4]byte slabs for raw batch calls
	gen        uint32
}

// benchKey is what the engine's sink loop keeps per key: the wanted entry,
// the held one, whether the index holds its bytes and, when not, the
// number of the read that last saw it.
type benchKey struct {
	want, have    node.Entry
	held, indexed bool
	seen          uint32
	ref           uint32
}

// hold and drop are the sink loop's holdEntry and dropEntry during a full
// reconcile: a key held is listed in pending, and the loop indexes the
// pending keys in one batch (reindex) once it has nothing left to write,
// or at the start of the next read.
func (st *benchState) hold(k *benchKey, e node.Entry) {
	if k.indexed && bytes.Equal(k.have.Data, e.Data) {
		k.have = e
		return
	}
	if k.held && !k.indexed {
		k.have = e
		return
	}
	st.drop(k)
	k.have, k.held = e, true
	st.unindexed++
	st.pending = append(st.pending, k.ref)
}

func (st *benchState) drop(k *benchKey) {
	if !k.held {
		return
	}
	if k.indexed {
		st.idx.Delete(k.have.Data)
	} else {
		st.unindexed--
	}
	k.have, k.held, k.indexed = node.Entry{}, false, false
}

// reindex is the sink loop's: the pending keys go into the index in one
// batch.
func (st *benchState) reindex() {
	if len(st.pending) == 0 {
		return
	}
	data, refs := make([][]byte, 0, len(st.pending)), make([]uint32, 0, len(st.pending))
	var keep []uint32
	for _, ref := range st.pending {
		k := &st.keys[ref]
		if !k.held || k.indexed {
			continue
		}
		k.indexed = true
		data, refs = append(data, k.have.Data), append(refs, ref)
	}
	ok := make([]bool, len(refs))
	st.idx.PutMany(data, refs, ok)
	for i, ref := range refs {
		if ok[i] {
			st.unindexed--
		} else {
			st.keys[ref].indexed = false
			keep = append(keep, ref)
		}
	}
	st.pending = keep
}

// forget resets what the loop believes the map holds, as a sink loop
// that starts does.
func (st *benchState) forget() {
	for i := range st.keys {
		k := &st.keys[i]
		k.have, k.held, k.indexed, k.seen = node.Entry{}, false, false, 0
	}
	st.idx, st.unindexed, st.pending = heldindex.New(), 0, nil
}

func newBenchState(b *testing.B) *benchState {
	if os.Geteuid() != 0 {
		b.Skip("needs root (CAP_BPF) and a bpffs")
	}
	pin := fmt.Sprintf("/sys/fs/bpf/pipeline-bench-%d", os.Getpid())
	b.Cleanup(func() { _ = os.RemoveAll(pin) })
	s := nodetest.MustBuild(b, Spec(), fmt.Sprintf("input = transform.extract.ips\npin = %q\nmax_entries = %d\nkey { type = \"ipv4\" }\nvalue {\n type = \"u32\"\n from = 1\n}", pin+"/m", 2*benchN), records).Sink.(*Sink)
	env, _ := nodetest.Env(b, nil)
	tg0, err := s.Open(context.Background(), env, node.ModeRun)
	if err != nil {
		b.Fatal(err)
	}
	st := &benchState{tg: tg0.(*Target), desired: make(map[node.Key]*benchKey, benchN), keys: make([]benchKey, benchN), idx: heldindex.New()}
	b.Cleanup(func() { _ = st.tg.Close() })
	start := time.Now()
	for _, r := range benchRecords() {
		e, err := st.tg.Prepare(r)
		if err != nil {
			b.Fatal(err)
		}
		st.entries = append(st.entries, e)
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/benchN, "prepare-ns/record")
	var kb, vb []byte
	st.rawK, kb = byteSlab(4, benchN)
	st.rawV, vb = byteSlab(4, benchN)
	for i, e := range st.entries {
		st.keys[i] = benchKey{want: e, ref: uint32(i)}
		st.desired[e.Key] = &st.keys[i]
		k, v := st.tg.split(e)
		copy(kb[i*4:], k)
		copy(vb[i*4:], v)
	}
	return st
}

func (st *benchState) clear(b *testing.B) {
	if _, err := st.tg.m.BatchDelete(st.rawK, nil); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		b.Fatal(err)
	}
}

// drift damages 1% of the map: 500 entries missing, 500 with a wrong
// value, and 1000 foreign entries.
func (st *benchState) drift() {
	for i := 0; i < benchN/100; i++ {
		k, _ := st.tg.split(st.entries[i*100])
		if i%2 == 0 {
			_ = st.tg.m.Delete(k)
		} else {
			_ = st.tg.m.Put(k, uint32(7))
		}
		_ = st.tg.m.Put([]byte{11, byte(i >> 8), byte(i), 1}, uint32(1))
	}
}

// timed runs f and adds its duration to *d.
func timed(d *time.Duration, f func()) {
	t0 := time.Now()
	f()
	*d += time.Since(t0)
}

// BenchmarkInitialReconcile measures, interleaved in each iteration so the
// ratios share the machine's state:
//   - floor: one raw BatchUpdate of the 100,000 pre-encoded keys;
//   - update: the Target's write path, Update of the 100,000 prepared
//     entries into the empty map (goal: <= 1.25x floor);
//   - empty: a full reconcile into the empty map by a loop that just
//     started, and its parts (read, diff, write);
//   - index: what the loop does next, with nothing left to write: put
//     the keys the reconcile wrote into the held index in one batch;
//   - drift1pct: the next full reconcile, of the full map after 1% drift,
//     and its parts: actual (the read), diff (the engine's loop, inlined:
//     a node package does not import the engine) and write;
//   - put-per-key: the hand-written baseline, one Map.Put per key.
//
// Prepare's cost is reported once, per record.
func BenchmarkInitialReconcile(b *testing.B) {
	st := newBenchState(b)
	var floor, update, empty, index, drift, perKey time.Duration
	var eActual, eDiff, eWrite, actual, diff, write time.Duration
	for b.Loop() {
		st.clear(b)
		timed(&floor, func() {
			if _, err := st.tg.m.BatchUpdate(st.rawK, st.rawV, nil); err != nil {
				b.Fatal(err)
			}
		})
		st.clear(b)
		timed(&update, func() { mustWrite(b, st.tg.Update, st.entries) })
		st.clear(b)
		st.forget()
		timed(&empty, func() { reconcile(b, st, &eActual, &eDiff, &eWrite) })
		timed(&index, st.reindex)
		st.drift()
		timed(&drift, func() { reconcile(b, st, &actual, &diff, &write) })
		st.clear(b)
		timed(&perKey, func() {
			for _, e := range st.entries {
				if err := st.tg.m.Put(st.tg.split(e)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	n := float64(b.N)
	for _, m := range []struct {
		d    time.Duration
		unit string
	}{{floor, "floor"}, {update, "update"}, {empty, "empty"}, {eActual, "empty-actual"}, {eDiff, "empty-diff"},
		{eWrite, "empty-write"}, {index, "index"}, {drift, "drift1pct"}, {actual, "drift-actual"},
		{diff, "drift-diff"}, {write, "drift-write"}, {perKey, "put-per-key"}} {
		b.ReportMetric(float64(m.d.Nanoseconds())/n, m.unit+"-ns/op")
	}
	b.ReportMetric(float64(update)/float64(floor), "update/floor")
	b.ReportMetric(float64(empty)/float64(floor), "empty/floor")
	b.ReportMetric(float64(drift)/float64(floor), "drift/floor")
	b.ReportMetric(float64(perKey)/float64(floor), "put-per-key/floor")
}

func mustWrite(b *testing.B, write func(context.Context, []node.Entry), es []node.Entry) {
	write(context.Background(), es)
	for _, e := range es {
		if e.Err != nil {
			b.Fatal(e.Err)
		}
	}
}

// reconcile is what the engine's full reconcile does with the target:
// read (ScanActual: an entry held with the same bytes is only marked as
// seen, in the index) and forget the held keys the read did not see,
// then one pass over its per-key state in memory order that writes the
// difference a chunk at a time, then tell the target how many entries it
// holds. The optional durations receive the parts; the read and the
// matching of what it finds are one pass, timed as the read.
func reconcile(b *testing.B, st *benchState, read, diff, write *time.Duration) {
	var part time.Duration
	mark := func(d *time.Duration, f func()) {
		timed(&part, f)
		if d != nil {
			*d += part
		}
		part = 0
	}
	var ups, dels []node.Entry
	if st.gen++; st.gen == 0 {
		st.gen = 1
	}
	gen := st.gen
	mark(read, func() {
		st.reindex()
		err := st.tg.ScanActual(context.Background(), func(data []byte) bool { return st.idx.Mark(data, gen) }, func(e node.Entry) {
			k := st.desired[e.Key]
			if k == nil { // not wanted: pruned
				dels = append(dels, e)
				return
			}
			if k.seen == gen || (k.indexed && st.idx.Marked(k.have.Data, gen)) {
				return
			}
			st.hold(k, e)
			k.seen = gen
			if k.indexed {
				st.idx.Mark(e.Data, gen)
			}
		})
		if err != nil {
			b.Fatal(err)
		}
		for _, ref := range st.idx.AppendUnmarked(nil, gen) {
			st.drop(&st.keys[ref])
		}
		if st.unindexed > 0 {
			for _, ref := range st.pending {
				if k := &st.keys[ref]; k.held && !k.indexed && k.seen != gen {
					st.drop(k)
				}
			}
		}
	})
	// The pass writes as it goes, chunk by chunk, keeping each entry's
	// state beside it to record the outcome, as the sink loop does
	// (engine fullChunk): write is the time in Update and Delete, diff
	// the rest of the pass.
	var writing time.Duration
	var states []*benchKey
	flush := func() {
		timed(&writing, func() {
			mustWrite(b, st.tg.Update, ups)
			mustWrite(b, st.tg.Delete, dels)
		})
		for i, e := range ups {
			st.hold(states[i], e)
		}
		ups, dels, states = ups[:0], dels[:0], states[:0]
	}
	mark(diff, func() {
		st.pending = slices.Grow(st.pending, max(0, len(st.keys)-st.idx.Len()-st.unindexed))
		ups, states = make([]node.Entry, 0, fullChunk), make([]*benchKey, 0, fullChunk)
		for i := range st.keys {
			k := &st.keys[i]
			if !k.held || !k.have.Same(k.want) {
				ups, states = append(ups, k.want), append(states, k)
			}
			if len(ups)+len(dels) >= fullChunk {
				flush()
			}
		}
		flush()
		st.tg.Held(len(st.keys)) // the sink loop's count after its writes
	})
	if diff != nil {
		*diff -= writing
	}
	if write != nil {
		*write += writing
	}
}
