package audit

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/pipeline/pipeline/engine/node"
)

// BenchmarkAppend appends one upsert line per Update, as the engine does for
// a change that arrives alone, under each fsync mode. It reports lines/s and
// the 99th percentile latency of one Update.
func BenchmarkAppend(b *testing.B) {
	for _, mode := range []string{"always", "interval", "never"} {
		b.Run("fsync="+mode, func(b *testing.B) {
			dir := b.TempDir()
			s := build(b, dir, `fsync = "`+mode+`"`+"\nmax_size = \"1GiB\"")
			tg, _, _ := open(b, s)
			defer tg.Close()
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			batch := make([]node.Entry, 1)
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				batch[0] = rec(i)
				t0 := time.Now()
				tg.Update(ctx, batch)
				lat = append(lat, time.Since(t0))
			}
			elapsed := time.Since(start)
			b.StopTimer()
			if batch[0].Err != nil {
				b.Fatal(batch[0].Err)
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "lines/s")
		})
	}
}

// BenchmarkVerify1M verifies a trail of 1,000,000 lines (about 250 MB, in
// rotated files of 64 MiB) and reports lines/s.
func BenchmarkVerify1M(b *testing.B) {
	const lines = 1_000_000
	dir := b.TempDir()
	s := build(b, dir, `fsync = "never"`+"\nmax_size = \"64MiB\"\nmax_files = 0")
	tg, _, _ := open(b, s)
	batch := make([]node.Entry, 1000)
	for i := 0; i < lines-1; i += len(batch) { // the open line is the first
		batch = batch[:min(len(batch), lines-1-i)]
		for j := range batch {
			batch[j] = rec(i + j)
		}
		tg.Update(context.Background(), batch)
	}
	if err := tg.Close(); err != nil {
		b.Fatal(err)
	}
	files, err := TrailFiles([]string{filepath.Join(dir, "trail.jsonl")})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		rep, err := Verify(files, filepath.Join(dir, "trail.jsonl.checkpoint"))
		if err != nil || rep.Problem != nil || rep.Lines < lines {
			b.Fatalf("verify: %v %v, %d lines", err, rep.Problem, rep.Lines)
		}
		b.ReportMetric(float64(rep.Lines)/rep.Elapsed.Seconds(), "lines/s")
	}
}
