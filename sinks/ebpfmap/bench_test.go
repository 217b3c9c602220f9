package ebpfmap

import (
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
)

const benchN = 100_000

// benchState is a pinned hash map, 100,000 prepared entries, and the same
// keys and values pre-encoded for the raw floor.
type benchState struct {
	tg         *Target
	entries    []node.Entry
	rawK, rawV any // [][4]byte slabs for raw batch calls
}

func newBenchState(b *testing.B) *benchState {
	if os.Geteuid() != 0 {
		b.Skip("needs root (CAP_BPF) and a bpffs")
	}
	pin := fmt.Sprintf("/sys/fs/bpf/pipeline-bench-%d", os.Getpid())
	b.Cleanup(func() { _ = os.RemoveAll(pin) })
	s := nodetest.MustBuild(b, Spec(), fmt.Sprintf("input = transform.extract.ips\npin = %q\nmax_entries = %d\nkey { type = \"ipv4\" }\nvalue {\n type = \"u32\"\n from = 1\n}", pin+"/m", 2*benchN), records).Sink.(*Sink)
	env, _ := nodetest.Env(b, nil)
	tg, err := s.Open(context.Background(), env, node.ModeRun)
	if err != nil {
		b.Fatal(err)
	}
	st := &benchState{tg: tg.(*Target)}
	b.Cleanup(func() { _ = st.tg.Close() })
	start := time.Now()
	for i := range benchN {
		e, err := st.tg.Prepare(node.Record{Key: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), Value: cty.EmptyObjectVal})
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

// BenchmarkUpdate measures the target's write path on one map, each part
// from the empty map and the parts taking turns going first, so that all
// meet the kernel's map in the same states:
//   - floor: one raw BatchUpdate of the 100,000 pre-encoded keys;
//   - update: Update of the 100,000 prepared entries (its batch calls,
//     4,096 entries each, and the copying of the entries' bytes into them);
//   - put-per-key: the hand-written baseline, one Map.Put per key.
//
// Each -ns/op metric is the median over the iterations. The sink loop's
// whole full reconcile (read, diff, write) is engine's
// BenchmarkFullReconcile. Prepare's cost is reported once, per record.
func BenchmarkUpdate(b *testing.B) {
	st := newBenchState(b)
	parts := []struct {
		unit string
		run  func()
		took []time.Duration
	}{
		{unit: "floor", run: func() {
			if _, err := st.tg.m.BatchUpdate(st.rawK, st.rawV, nil); err != nil {
				b.Fatal(err)
			}
		}},
		{unit: "update", run: func() {
			st.tg.Update(context.Background(), st.entries)
			for _, e := range st.entries {
				if e.Err != nil {
					b.Fatal(e.Err)
				}
			}
		}},
		{unit: "put-per-key", run: func() {
			for _, e := range st.entries {
				if err := st.tg.m.Put(st.tg.split(e)); err != nil {
					b.Fatal(err)
				}
			}
		}},
	}
	for i := 0; b.Loop(); i++ {
		for j := range parts {
			p := &parts[(i+j)%len(parts)]
			st.clear(b)
			t0 := time.Now()
			p.run()
			p.took = append(p.took, time.Since(t0))
		}
	}
	med := make([]float64, len(parts))
	for i, p := range parts {
		slices.Sort(p.took)
		med[i] = float64(p.took[len(p.took)/2].Nanoseconds())
		b.ReportMetric(med[i], p.unit+"-ns/op")
	}
	b.ReportMetric(med[1]/med[0], "update/floor")
	b.ReportMetric(med[2]/med[0], "put-per-key/floor")
}
