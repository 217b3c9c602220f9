//go:build integration

package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/cilium/ebpf"
)

// TestReconcileRealMap: a pinned map with stale, wrong and missing entries
// converges with the minimum number of writes; a restart over the converged
// map writes nothing; an entry deleted by hand is repaired at resync.
func TestReconcileRealMap(t *testing.T) {
	requireRoot(t)
	pin := pinDir(t) + "/nets"
	cfg := fmt.Sprintf(`
source "static" "nets" {
  records = {
    "10.0.0.1" = { id = 1 }
    "10.0.0.2" = { id = 2 }
    "10.0.0.3" = { id = 3 }
    "10.0.0.4" = { id = 4 }
  }
}
sink "ebpf_map" "nets" {
  input  = source.static.nets
  pin    = %q
  resync = "1s"
  key {
    type = "ipv4"
  }
  value {
    type = "u32"
    from = record.value.id
  }
}
`, pin)
	// First run creates the map; then we damage it by hand.
	r := start(t, cfg)
	r.waitReady(t)
	r.stop()
	m, err := ebpf.LoadPinnedMap(pin, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(m.Delete([]byte{10, 0, 0, 1}))          // missing
	must(m.Put([]byte{10, 0, 0, 2}, uint32(99))) // wrong value
	must(m.Put([]byte{10, 9, 9, 9}, uint32(7)))  // stale
	must(m.Put([]byte{10, 9, 9, 8}, uint32(7)))  // stale

	r = start(t, cfg)
	r.waitReady(t)
	eventually(t, 5*time.Second, "converged", func() bool {
		ups, dels := r.writes("sink.ebpf_map.nets")
		return ups == 2 && dels == 2
	})
	if ups, dels := r.writes("sink.ebpf_map.nets"); ups != 2 || dels != 2 {
		t.Fatalf("converging wrote %v upserts and %v deletes, want exactly 2 and 2", ups, dels)
	}
	checkMap(t, m, map[[4]byte]uint32{{10, 0, 0, 1}: 1, {10, 0, 0, 2}: 2, {10, 0, 0, 3}: 3, {10, 0, 0, 4}: 4})
	r.stop()

	r = start(t, cfg)
	r.waitReady(t)
	if ups, dels := r.writes("sink.ebpf_map.nets"); ups != 0 || dels != 0 {
		t.Fatalf("a restart over an equal map wrote %v upserts and %v deletes", ups, dels)
	}
	must(m.Delete([]byte{10, 0, 0, 3}))
	eventually(t, 5*time.Second, "entry deleted by hand repaired at resync", func() bool {
		var v uint32
		return m.Lookup([]byte{10, 0, 0, 3}, &v) == nil && v == 3
	})
	if got := r.metric(t, "pipeline_sink_drift_repaired_total", "sink.ebpf_map.nets"); got != 1 {
		t.Fatalf("drift repaired = %v, want 1", got)
	}
}

func checkMap(t *testing.T, m *ebpf.Map, want map[[4]byte]uint32) {
	t.Helper()
	got := map[[4]byte]uint32{}
	var k [4]byte
	var v uint32
	it := m.Iterate()
	for it.Next(&k, &v) {
		got[k] = v
	}
	if it.Err() != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("map = %v (%v), want %v", got, it.Err(), want)
	}
}
