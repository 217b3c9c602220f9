package ebpfmap

import (
	"bytes"
	"context"
	"errors"
	"github.com/pipeline/pipeline/engine/node"
	"testing"
	"time"

	"github.com/cilium/ebpf"
)

func BenchmarkZZActual(b *testing.B) {
	st := newBenchState(b)
	if _, err := st.tg.m.BatchUpdate(st.rawK, st.rawV, nil); err != nil {
		b.Fatal(err)
	}
	st.tg.Held(benchN)
	outK, outV := make([][4]byte, 4096), make([]uint32, 4096)
	var raw, act time.Duration
	for b.Loop() {
		timed(&raw, func() {
			var cur ebpf.MapBatchCursor
			for {
				_, err := st.tg.m.BatchLookup(&cur, outK, outV, nil)
				if errors.Is(err, ebpf.ErrKeyNotExist) {
					break
				}
			}
		})
		timed(&act, func() {
			st.tg.ScanActual(context.Background(), func(key, data []byte) bool {
				k := st.desired[string(key)]
				return k != nil && bytes.Equal(k.want.Data, data)
			}, func(node.Entry) {})
		})
	}
	b.ReportMetric(float64(raw.Nanoseconds())/float64(b.N), "raw-ns/op")
	b.ReportMetric(float64(act.Nanoseconds())/float64(b.N), "actual-ns/op")
	b.ReportMetric(float64(act)/float64(raw), "ratio")
}
