package sinkloop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/zclconf/go-cty/cty"
	"golang.org/x/sys/unix"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/sinks/ebpfmap"
)

// reconcileKeys is the size of BenchmarkFullReconcile.
const reconcileKeys = 100_000

// reconcileBench is a sink loop over an ebpf_map sink (IPv4 key, u32
// value) pinned at pin, with reconcileKeys records, and the same keys and
// values pre-encoded for the raw floors.
type reconcileBench struct {
	b      *testing.B
	sink   node.Sink
	pin    string
	spec   *ebpf.MapSpec
	recs   []node.Record
	keys   [][4]byte
	vals   []uint32
	loop   *state
	target node.Target
	m      *ebpf.Map // the same map, for the floors
}

func newReconcileBench(b *testing.B) *reconcileBench {
	if os.Geteuid() != 0 {
		b.Skip("needs root (CAP_BPF) and a bpffs")
	}
	dir := fmt.Sprintf("/sys/fs/bpf/pipeline-bench-%d", os.Getpid())
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	rb := &reconcileBench{b: b, pin: dir + "/m",
		spec: &ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 2 * reconcileKeys}}
	body := fmt.Sprintf("input = transform.extract.ips\npin = %q\nmax_entries = %d\nkey { type = \"ipv4\" }\nvalue {\n type = \"u32\"\n from = 1\n}", rb.pin, rb.spec.MaxEntries)
	rb.sink = nodetest.MustBuild(b, ebpfmap.Spec(), body, &node.Upstream{Address: "transform.extract.ips", Type: node.Records}).Sink
	rb.keys, rb.vals = make([][4]byte, reconcileKeys), make([]uint32, reconcileKeys)
	for i := range rb.keys {
		rb.keys[i], rb.vals[i] = [4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}, 1
		rb.recs = append(rb.recs, node.Record{Key: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), Value: cty.EmptyObjectVal})
	}
	rb.open()
	b.Cleanup(rb.stop)
	return rb
}

// open opens the sink, creating its map.
func (rb *reconcileBench) open() {
	env, _ := nodetest.Env(rb.b, nil)
	env.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	target, err := rb.sink.Open(context.Background(), env, node.ModeRun)
	if err != nil {
		rb.b.Fatal(err)
	}
	m, err := ebpf.LoadPinnedMap(rb.pin, nil)
	if err != nil {
		rb.b.Fatal(err)
	}
	rb.target, rb.m = target, m
}

// clear empties the map.
func (rb *reconcileBench) clear() {
	foreign := make([][4]byte, 0, reconcileKeys/100)
	for i := 0; i < reconcileKeys/100; i++ {
		foreign = append(foreign, [4]byte{11, byte(i >> 8), byte(i), 1})
	}
	for _, keys := range [][][4]byte{rb.keys, foreign} {
		if _, err := rb.m.BatchDelete(keys, nil); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			rb.b.Fatal(err)
		}
	}
}

// start gives a new sink loop over the open target the records, as at
// start-up once the input synced: the loop's next step is its first full
// reconcile.
func (rb *reconcileBench) start() {
	s := New(nopConfig(Config{Address: "sink.ebpf_map.bench", Prune: true})).newState(rb.target)
	for _, r := range rb.recs {
		s.put(r, time.Time{})
	}
	s.synced, s.needFull = true, true
	rb.loop = s
}

func (rb *reconcileBench) stop() {
	if rb.target != nil {
		if err := errors.Join(rb.target.Close(), rb.m.Close()); err != nil {
			rb.b.Fatal(err)
		}
		rb.loop, rb.target, rb.m = nil, nil, nil
	}
}

// full runs the loop's full reconcile and checks it left no failure.
func (rb *reconcileBench) full() {
	rb.loop.needFull = true
	rb.loop.full(context.Background())
	if n := rb.loop.retries.Len(); n > 0 || rb.loop.actual.n != reconcileKeys {
		rb.b.Fatalf("full reconcile: %d failing entries, %d in the map; want 0 and %d", n, rb.loop.actual.n, reconcileKeys)
	}
}

// drift damages 1% of m as an outside writer would: 500 entries
// missing, 500 with a wrong value, and 1,000 foreign entries. It returns
// the entries a repair writes and the keys it deletes.
func drift(b *testing.B, m *ebpf.Map, keys [][4]byte) (fix [][4]byte, foreign [][4]byte) {
	for i := 0; i < len(keys)/100; i++ {
		k := keys[i*100]
		var err error
		if i%2 == 0 {
			err = m.Delete(k)
		} else {
			err = m.Put(k, uint32(7))
		}
		f := [4]byte{11, byte(i >> 8), byte(i), 1}
		if err = errors.Join(err, m.Put(f, uint32(1))); err != nil {
			b.Fatal(err)
		}
		fix, foreign = append(fix, k), append(foreign, f)
	}
	return fix, foreign
}

// timed returns how long f took.
func timed(f func()) time.Duration {
	t0 := time.Now()
	f()
	return time.Since(t0)
}

// pinToOneCPU runs the calling goroutine, until the benchmark ends, on
// one thread that runs on CPU 0 only, for the floors and the loop alike
// (the loop's work runs on the benchmark's goroutine). Unpinned, the same
// binary's single runs gave the loop 0.7x to 1.7x the floor on these
// 2-vCPU machines, as the parts landed on one CPU or the other; pinned,
// 1.1x to 1.35x.
func pinToOneCPU(b *testing.B) {
	runtime.LockOSThread()
	b.Cleanup(runtime.UnlockOSThread)
	var set, was unix.CPUSet
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		b.Fatal(err)
	}
	set.Set(0)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = unix.SchedSetaffinity(0, &was) })
}

// median returns the median of ds.
func median(ds []time.Duration) time.Duration {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// BenchmarkFullReconcile measures the sink loop's full reconcile with the
// ebpf_map target, 100,000 keys, against the raw work on the same map in
// the same iterations. Each timed part starts from an empty map (cleared
// by one BatchDelete), and the floors and the loop take turns going first,
// so that both meet the kernel's map in the same states: how fast one
// hash map fills depends on the map (two maps of one spec differ by up to
// 2x here) and on the order of its free elements. Each timed part also
// starts with cold caches (evictCaches), as a start-up and a resync on a
// timer meet them: a floor that ran right after its own fill of the map
// found the kernel's part of it in the caches, and ran up to 25% faster
// than after the loop's work in between. The floors' own buffers are
// warmed after that (warm), as a controller's that just built them.
//   - floor: one BatchUpdate of the 100,000 keys, pre-encoded, the
//     fastest a hand-written controller could fill the map;
//   - drift-floor: after 1% drift of that map, a BatchLookup of the whole
//     map, one BatchUpdate of the 1,000 wrong or missing entries and one
//     BatchDelete of the 1,000 foreign keys, already known;
//   - empty: a new loop's first full reconcile, as at start-up (read,
//     diff, write; goal: <= 1.25x floor);
//   - index: what the loop does next, idle: it indexes what it wrote;
//   - drift1pct-first: the loop's next full reconcile after the same
//     drift, its first read of the full map, which meets the entries in
//     an order it does not know yet;
//   - settle: what the loop does next, idle: it indexes what it wrote
//     and lays its index out in the order of the read;
//   - drift1pct: the loop's next full reconcile after the same drift
//     again, as every resync after the first meets it (goal: <= 2x
//     drift-floor).
//
// Each -ns/op metric is the median over the iterations, and each ratio the
// median of the iterations' ratios.
func BenchmarkFullReconcile(b *testing.B) {
	rb := newReconcileBench(b)
	pinToOneCPU(b)
	var floor, driftFloor, empty, index, first, settle, drift1 []time.Duration
	outK, outV := make([][4]byte, 2*reconcileKeys), make([]uint32, 2*reconcileKeys)
	evict := make([]uint64, 8<<20)
	floors := func() {
		rb.clear()
		runtime.GC() // no garbage of the set-up is collected while timed
		evictCaches(evict)
		warm(rb.keys, rb.vals)
		floor = append(floor, timed(func() {
			if _, err := rb.m.BatchUpdate(rb.keys, rb.vals, nil); err != nil {
				b.Fatal(err)
			}
		}))
		fix, foreign := drift(b, rb.m, rb.keys)
		ones := rb.vals[:len(fix)]
		evictCaches(evict)
		warm(fix, ones)
		warm(foreign, outV)
		warm(outK, []byte(nil))
		driftFloor = append(driftFloor, timed(func() {
			var cur ebpf.MapBatchCursor
			for {
				_, err := rb.m.BatchLookup(&cur, outK, outV, nil)
				if errors.Is(err, ebpf.ErrKeyNotExist) {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			if _, err := rb.m.BatchUpdate(fix, ones, nil); err != nil {
				b.Fatal(err)
			}
			if _, err := rb.m.BatchDelete(foreign, nil); err != nil {
				b.Fatal(err)
			}
		}))
	}
	loop := func() {
		rb.clear()
		rb.start()
		runtime.GC()
		evictCaches(evict)
		empty = append(empty, timed(rb.full))
		index = append(index, timed(rb.loop.actual.tidy))
		drift(b, rb.m, rb.keys)
		evictCaches(evict)
		first = append(first, timed(rb.full))
		settle = append(settle, timed(rb.loop.actual.tidy))
		drift(b, rb.m, rb.keys)
		evictCaches(evict)
		drift1 = append(drift1, timed(rb.full))
	}
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			floors()
			loop()
		} else {
			loop()
			floors()
		}
	}
	ratio := func(a, b []time.Duration) float64 {
		rs := make([]time.Duration, len(a))
		for i := range a {
			rs[i] = a[i] * 1e6 / b[i]
		}
		return float64(median(rs)) / 1e6
	}
	for _, m := range []struct {
		d    []time.Duration
		unit string
	}{{floor, "floor"}, {empty, "empty"}, {index, "index"}, {driftFloor, "drift-floor"}, {first, "drift1pct-first"}, {settle, "settle"}, {drift1, "drift1pct"}} {
		b.ReportMetric(float64(median(m.d).Nanoseconds()), m.unit+"-ns/op")
	}
	b.ReportMetric(ratio(empty, floor), "empty/floor")
	b.ReportMetric(ratio(first, driftFloor), "drift-first/floor")
	b.ReportMetric(ratio(drift1, driftFloor), "drift/floor")
}

// discardData is a node.Chunked that reads as its target does and
// writes nothing: with it a sink loop's full pass costs only the loop's
// own work.
type discardData struct{ node.Chunked }

func (discardData) UpdateData(_ context.Context, _ []byte, _ int, errs []error) { clear(errs) }

// warm reads keys and values into the caches: a floor's input and
// output buffers are as warm as a hand-written controller's that just
// built them (the loop's are, for it builds each chunk just before its
// call); only the kernel's map starts cold.
func warm[K, V any](keys []K, vals []V) {
	var sink byte
	for _, b := range [][]byte{asBytes(keys), asBytes(vals)} {
		for i := 0; i < len(b); i += 64 {
			sink ^= b[i]
		}
	}
	warmSink = sink
}

var warmSink byte

func asBytes[E any](s []E) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// evictCaches writes over 64 MB, twice the last-level cache here, so
// that what follows starts with cold caches, as a full reconcile does.
func evictCaches(buf []uint64) {
	for i := range buf {
		buf[i]++
	}
}

// BenchmarkFullPass measures the sink loop's own work in the first full
// reconcile of 100,000 keys into an empty map (BenchmarkFullReconcile's
// empty part), the target's writes left out: the read of the empty map,
// the walk over the key states, the Data gathered into batches and the
// keys recorded in actual. Caches are evicted before each pass. It varies
// far less from run to run than the kernel's part, so it shows what a
// change of the loop's code is worth.
func BenchmarkFullPass(b *testing.B) {
	rb := newReconcileBench(b)
	pinToOneCPU(b)
	rb.clear()
	rb.start()
	s := rb.loop
	s.chunked = discardData{rb.target.(node.Chunked)}
	runtime.GC()
	buf := make([]uint64, 8<<20)
	var passes []time.Duration
	for b.Loop() {
		for ks := range s.keys.states {
			s.actual.drop(ks)
		}
		s.walked = regime{}
		s.actual = newActual(&s.keys, true)
		evictCaches(buf)
		passes = append(passes, timed(rb.full))
	}
	b.ReportMetric(float64(median(passes).Microseconds()), "pass-us")
}

// BenchmarkKeyMemory measures the heap a sink loop keeps per key of an
// ebpf_map sink (IPv4 key, u32 value) after its first full reconcile of
// 100,000 keys: the key states with the prepared Data they keep, the
// index by key, and the byte index once laid out (byteindex). The records
// themselves are the input's, built before.
func BenchmarkKeyMemory(b *testing.B) {
	rb := newReconcileBench(b)
	heap := func() float64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return float64(ms.HeapAlloc)
	}
	var state, index []float64
	for b.Loop() {
		rb.clear()
		rb.loop = nil
		before := heap()
		rb.start()
		rb.full()
		rb.loop.actual.tidy()
		all := heap()
		idx := 0
		if rb.loop.actual.idx != nil {
			rb.loop.actual.idx = nil
			idx = 1
		}
		noIndex := heap()
		state, index = append(state, (noIndex-before)/reconcileKeys), append(index, float64(idx)*(all-noIndex)/reconcileKeys)
	}
	slices.Sort(state)
	slices.Sort(index)
	b.ReportMetric(state[len(state)/2], "state-B/key")
	b.ReportMetric(index[len(index)/2], "index-B/key")
}
