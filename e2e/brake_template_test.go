//go:build integration

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/sinks/template"
	"github.com/pipeline/pipeline/sources/files"
)

// TestBrakeTemplate: a proxy's backends rendered from a JSON file; the
// file rewritten to [] leaves the render as it was (the removed records
// are deletes the brake holds), and backends coming back within the limit
// render without the ones still gone.
func TestBrakeTemplate(t *testing.T) {
	dir := t.TempDir()
	data, out := filepath.Join(dir, "backends.json"), filepath.Join(dir, "backends.cfg")
	write := func(n int) {
		t.Helper()
		items := make([]string, n)
		for i := range items {
			items[i] = fmt.Sprintf(`{"ip": "10.0.2.%d"}`, i+1)
		}
		if err := os.WriteFile(data+".tmp", []byte("["+strings.Join(items, ",")+"]"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(data+".tmp", data); err != nil {
			t.Fatal(err)
		}
	}
	lines := func() int {
		b, err := os.ReadFile(out)
		if err != nil {
			return -1
		}
		return strings.Count(string(b), "server ")
	}
	write(30)
	r := startWith(t, fmt.Sprintf(`
source "files" "backends" {
  paths  = [%q]
  format = "json"
  key    = item.ip
}
sink "template" "proxy" {
  input    = source.files.backends
  path     = %q
  template = "%%{ for r in records }server ${r.key}\n%%{ endfor }"
}
`, data, out), node.NewRegistry(files.Spec(), template.Spec()))
	r.waitReady(t)
	eventually(t, 10*time.Second, "30 backends rendered", func() bool { return lines() == 30 })

	write(0)
	eventually(t, 10*time.Second, "deletes held", func() bool {
		return strings.Contains(fmt.Sprint(r.rt.Readiness()), "30 deletes held by the deletion brake")
	})
	if n := lines(); n != 30 {
		t.Fatalf("the render holds %d backends while the brake holds their removal, want 30", n)
	}
	if v := gaugeValue(r, "pipeline_sink_deletes_held", "sink.template.proxy"); v != 30 {
		t.Fatalf("pipeline_sink_deletes_held = %v, want 30", v)
	}

	write(25) // 5 gone: within the brake's floor
	eventually(t, 10*time.Second, "25 backends rendered", func() bool { return lines() == 25 })
	r.waitReady(t)
}
