package files

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/pipeline/pipeline/engine/node"
)

// TestManySmallFiles: many small files become records without holding
// every file's parsed documents at once: the live heap stays within about
// what the records themselves take (100,000 files of 80 bytes passed 1 GB).
func TestManySmallFiles(t *testing.T) {
	dir := t.TempDir()
	const n = 20_000
	for i := range n {
		name := fmt.Sprintf("p%06d", i)
		body := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"ns"}}` + "\n"
		if err := os.WriteFile(filepath.Join(dir, name+".json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := mustBuild(t, dir, `paths = ["*.json"]`)
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	read := func() uint64 { metrics.Read(live); return live[0].Value.Uint64() }
	runtime.GC()
	base := read()
	stop, peak := make(chan struct{}), make(chan uint64)
	go func() {
		var top uint64
		for {
			top = max(top, read()) // the live heap at the last GC (every 10% of growth)
			select {
			case <-stop:
				peak <- top
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	records, _, skips := s.records(s.read().files)
	close(stop)
	top := (<-peak - base) >> 20
	if len(records) != n || len(skips) != 0 {
		t.Fatalf("%d records, %d skips", len(records), len(skips))
	}
	runtime.GC()
	kept := (read() - base) >> 20
	runtime.KeepAlive(records)
	t.Logf("heap: peak %d MiB above the start, %d MiB kept (the records)", top, kept)
	if top > kept+kept/2+16 {
		t.Errorf("heap peaked at %d MiB to make records that keep %d MiB", top, kept)
	}
}

// TestOneFileChangedAmongMany: a reload after one of many files changed
// parses and converts that file only; the others keep their records (the
// same origin, made once per object version). Before, every file was
// parsed and converted again, so the old and the new records were held at
// once (100,000 files of 80 bytes: 1.5 GB RSS after a change to one of
// them).
func TestOneFileChangedAmongMany(t *testing.T) {
	dir := t.TempDir()
	const n = 5_000
	write := func(i int, label string) {
		name := fmt.Sprintf("p%06d", i)
		body := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"ns","labels":{"v":"` + label + `"}}}` + "\n"
		if err := os.WriteFile(filepath.Join(dir, name+".json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		write(i, "a")
	}
	r := newFaultRun(t, dir, `paths = ["*.json"]`)
	origins := func() map[string]*node.Origin {
		out := map[string]*node.Origin{}
		for _, g := range r.good {
			for _, e := range g.entries {
				out[e.rec.Key] = e.rec.Origin
			}
		}
		return out
	}
	if err := r.reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	first := origins()
	write(7, "b")
	if err := r.reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := r.out.State()
	if len(got) != n {
		t.Fatalf("%d records, want %d", len(got), n)
	}
	if v := got["ns/p000007"].GetAttr("metadata").GetAttr("labels").GetAttr("v"); v.AsString() != "b" {
		t.Errorf("the changed file's record holds v = %#v", v)
	}
	made := 0
	for k, o := range origins() {
		if first[k] != o {
			made++
		}
	}
	if made != 1 {
		t.Errorf("a reload after one file changed made %d records anew, want 1: unchanged files were parsed again", made)
	}
}

// BenchmarkFileEntries makes the record of one of row F1's files: an
// 80-byte Pod in JSON, parsed, keyed and packed (docs/performance.md, F1).
func BenchmarkFileEntries(b *testing.B) {
	s := mustBuild(b, b.TempDir(), `paths = ["*.json"]`)
	f := file{path: "/data/p000001.json", data: []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p000001","namespace":"ns","labels":{"v":"a"}}}` + "\n")}
	b.ReportAllocs()
	for b.Loop() {
		if entries, _, _ := s.fileEntries(context.Background(), f); len(entries) != 1 || entries[0].odd != nil {
			b.Fatalf("%d entries", len(entries))
		}
	}
}
