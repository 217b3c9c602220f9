package ebpfmap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

const benchN = 100_000

func benchRecords() []node.Record {
	recs := make([]node.Record, benchN)
	for i := range recs {
		recs[i] = node.Record{Key: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), Value: cty.EmptyObjectVal}
	}
	return recs
}

// BenchmarkInitialReconcile measures a full reconcile of 100,000 records
// (read the map, diff, write the difference in batches) into an empty
// pinned hash map and into one with 1% drift, against the floor measured in
// the same run: one raw BatchUpdate of the same pre-encoded keys. It also
// measures the hand-written baseline (one Map.Put per key). Reported:
// ns/op of each, and ratio = target / floor (goal <= 1.25).
func BenchmarkInitialReconcile(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root (CAP_BPF) and a bpffs")
	}
	pin := fmt.Sprintf("/sys/fs/bpf/pipeline-bench-%d", os.Getpid())
	b.Cleanup(func() { _ = os.RemoveAll(pin) })
	s := nodetest.MustBuild(b, Spec(), fmt.Sprintf("input = transform.extract.ips\npin = %q\nmax_entries = %d\nkey { type = \"ipv4\" }\nvalue {\n type = \"u32\"\n from = 1\n}", pin+"/m", 2*benchN), records).(*Sink)
	env, _ := nodetest.Env(b, nil)
	tg0, err := s.Open(context.Background(), env, node.ModeRun)
	if err != nil {
		b.Fatal(err)
	}
	tg := tg0.(*Target)
	defer tg.Close()
	recs := benchRecords()
	start := time.Now()
	entries := make([]node.Entry, len(recs))
	for i, r := range recs {
		if entries[i], err = tg.Prepare(r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/benchN, "prepare-ns/record")
	desired := make(map[node.Key]node.Entry, len(entries))
	for _, e := range entries {
		desired[e.Key] = e
	}
	keys, kb := byteSlab(4, benchN)
	vals, vb := byteSlab(4, benchN)
	for i, e := range entries {
		copy(kb[i*4:], e.Raw.(raw).key)
		copy(vb[i*4:], e.Raw.(raw).value)
	}
	clearMap := func() {
		if _, err := tg.m.BatchDelete(keys, nil); err != nil && !isMissing(err) {
			b.Fatal(err)
		}
	}
	var floor, empty, drift, perKey time.Duration
	for b.Loop() {
		clearMap()
		t0 := time.Now()
		if _, err := tg.m.BatchUpdate(keys, vals, nil); err != nil {
			b.Fatal(err)
		}
		floor += time.Since(t0)

		clearMap()
		t0 = time.Now()
		reconcile(b, tg, desired)
		empty += time.Since(t0)

		// 1% drift: 500 entries missing, 500 with a wrong value, 1000 stale.
		for i := 0; i < benchN/100; i++ {
			k := entries[i*100].Raw.(raw).key
			if i%2 == 0 {
				_ = tg.m.Delete(k)
			} else {
				_ = tg.m.Put(k, uint32(7))
			}
			_ = tg.m.Put([]byte{11, byte(i >> 8), byte(i), 1}, uint32(1))
		}
		t0 = time.Now()
		reconcile(b, tg, desired)
		drift += time.Since(t0)

		clearMap()
		t0 = time.Now()
		for _, e := range entries {
			if err := tg.m.Put(e.Raw.(raw).key, e.Raw.(raw).value); err != nil {
				b.Fatal(err)
			}
		}
		perKey += time.Since(t0)
	}
	n := float64(b.N)
	b.ReportMetric(float64(floor.Nanoseconds())/n, "floor-ns/op")
	b.ReportMetric(float64(empty.Nanoseconds())/n, "empty-ns/op")
	b.ReportMetric(float64(drift.Nanoseconds())/n, "drift1pct-ns/op")
	b.ReportMetric(float64(perKey.Nanoseconds())/n, "put-per-key-ns/op")
	b.ReportMetric(float64(empty)/float64(floor), "empty/floor")
	b.ReportMetric(float64(perKey)/float64(floor), "put-per-key/floor")
}

func isMissing(err error) bool { return errors.Is(err, ebpf.ErrKeyNotExist) }

// reconcile is what the engine's full reconcile does with the target:
// read, diff (reconcile.Diff's loop, inlined because a node package does not
// import the engine), write the difference. desired is keyed as the engine
// keeps it.
func reconcile(b *testing.B, tg *Target, desired map[node.Key]node.Entry) {
	actual, err := tg.Actual(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	have := make(map[node.Key]node.Entry, len(actual))
	for _, e := range actual {
		have[e.Key] = e
	}
	ups, dels := make([]node.Entry, 0, max(len(desired)-len(have), 16)), []node.Entry(nil)
	for k, e := range desired {
		if h, ok := have[k]; !ok || !h.Value.RawEquals(e.Value) {
			ups = append(ups, e)
		}
	}
	for k, e := range have {
		if _, ok := desired[k]; !ok {
			dels = append(dels, e)
		}
	}
	tg.Update(context.Background(), ups)
	tg.Delete(context.Background(), dels)
	for _, e := range append(ups, dels...) {
		if e.Err != nil {
			b.Fatal(e.Err)
		}
	}
}
