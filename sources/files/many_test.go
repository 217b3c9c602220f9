package files

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
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
