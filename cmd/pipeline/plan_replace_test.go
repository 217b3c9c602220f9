package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipeline/pipeline/engine"
)

// replaceConfig is a static source into a pinned hash map of max entries.
func replaceConfig(pin string, max int, mismatch string) string {
	return fmt.Sprintf(`source "static" "ips" {
  records = { "10.0.0.1" = 1, "10.0.0.2" = 2 }
}
sink "ebpf_map" "allowed" {
  input       = source.static.ips
  pin         = %q
  type        = "hash"
  max_entries = %d
  on_mismatch = %q
  key {
    type = "ip"
  }
  value {
    type = "u32"
    from = record.value
  }
}
`, pin, max, mismatch)
}

// tempPin returns a pin path in a new directory of the bpffs, removed
// after the test; without root or a bpffs the test skips (fails in CI).
func tempPin(t *testing.T, prefix string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		missingInCI(t, "a pinned map needs root (bpffs)")
	}
	bpfDir, err := os.MkdirTemp("/sys/fs/bpf", prefix)
	if err != nil {
		missingInCI(t, "no bpffs at /sys/fs/bpf: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(bpfDir) })
	return filepath.Join(bpfDir, "allowed")
}

// TestPlanRecreate: with on_mismatch = "recreate", a pinned map that
// differs from the declaration is one plan shows as "must be replaced",
// exiting 2; with "error" plan fails as run would. Run replaces it and says
// so at WARN. A clean exit removes the pin's lock file.
func TestPlanRecreate(t *testing.T) {
	pin, dir := tempPin(t, "plan-replace-"), t.TempDir()

	r := launch(t, dir, replaceConfig(pin, 8, "error"))
	waitReady(t, http.DefaultClient, "http://"+r.addr+"/readyz")
	if err := r.stop(); err != nil {
		t.Fatalf("run: %v\n%s", err, r.stderr.String())
	}

	lock := filepath.Join("/run/pipeline/locks", strings.ReplaceAll(strings.TrimPrefix(pin, "/"), "/", "%")+".lock")
	if _, err := os.Stat(lock); err == nil {
		t.Errorf("a clean exit left the lock file %s", lock)
	}

	cfg := filepath.Join(dir, "p.hcl")
	writeConfig(t, cfg, replaceConfig(pin, 16, "error"))
	if out, code := planCLI("plan", cfg); code != 1 || !strings.Contains(out, "differs from the declaration") {
		t.Errorf("plan with on_mismatch = \"error\": exit %d, want 1 and the mismatch:\n%s", code, out)
	}
	writeConfig(t, cfg, replaceConfig(pin, 16, "recreate"))
	out, code := planCLI("plan", cfg)
	if code != 2 || !strings.Contains(out, "must be replaced") || !strings.Contains(out, "max_entries is 8, declared 16") ||
		!strings.Contains(out, "Plan: 1 to replace, 2 to add") {
		t.Errorf("plan with on_mismatch = \"recreate\": exit %d, want 2 and \"must be replaced\":\n%s", code, out)
	}
	if out, _ := planCLI("plan", "--json", cfg); !strings.Contains(out, `"replace": "the pinned map differs`) {
		t.Errorf("plan --json lacks the replacement:\n%s", out)
	}

	r = launch(t, dir, replaceConfig(pin, 16, "recreate"))
	waitReady(t, http.DefaultClient, "http://"+r.addr+"/readyz")
	if err := r.stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	if log := r.stderr.String(); !strings.Contains(log, `"level":"WARN","msg":"pinned map replaced`) {
		t.Errorf("run did not warn of the replaced map:\n%s", log)
	}
}

// TestReloadWarnsOfReplacedMap: a hot reload that recreates a pinned map
// (on_mismatch = "recreate") reports it as a warning in /reloads, since
// programs holding the old map keep it; a reload that keeps the map has
// no warning.
func TestReloadWarnsOfReplacedMap(t *testing.T) {
	pin, dir := tempPin(t, "reload-replace-"), t.TempDir()
	cfg := filepath.Join(dir, "p.hcl")
	saveFile(t, cfg, replaceConfig(pin, 8, "recreate"))
	w := runWatched(t, dir)

	saveFile(t, cfg, replaceConfig(pin, 16, "recreate"))
	rec := w.settle(t, 1)[0]
	if rec.Result != engine.ReloadApplied || len(rec.Warnings) != 1 ||
		!strings.HasPrefix(rec.Warnings[0], "sink.ebpf_map.allowed: pinned map replaced: it differed from the declaration (max_entries is 8, declared 16)") {
		t.Fatalf("reload that recreated the map: %s, warnings %q", rec.Result, rec.Warnings)
	}

	saveFile(t, cfg, strings.Replace(replaceConfig(pin, 16, "recreate"), `"10.0.0.2" = 2`, `"10.0.0.2" = 3`, 1))
	if rec := w.settle(t, 2)[0]; rec.Result != engine.ReloadApplied || len(rec.Warnings) != 0 {
		t.Errorf("reload that kept the map: %s, warnings %q", rec.Result, rec.Warnings)
	}
}
