package template

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pipeline/pipeline/engine/node"
)

// A failed reload is retried with backoff (1s, 2s, 4s ..., each at random
// in its upper half) until it succeeds, and the target is degraded
// meanwhile.
func TestReloadRetriedWithBackoff(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ready")
	synctest.Test(t, func(t *testing.T) {
		f := open(t, serversTmpl+fmt.Sprintf(`reload_command = ["sh", "-c", "test -e %s"]`, marker))
		f.put("a", server("10.0.0.1", 80), full)
		if f.health.State() != node.Degraded || !strings.Contains(f.health.Detail, "reload failed") {
			t.Fatalf("health %v %q after a failed reload", f.health.State(), f.health.Detail)
		}
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		if n := f.count("pipeline_sink_template_reloads_total", "result", "failed"); n != 1 {
			t.Fatalf("retried before its backoff: failed = %v", n)
		}
		time.Sleep(500 * time.Millisecond) // 1s: the first retry came, and failed
		synctest.Wait()
		if n := f.count("pipeline_sink_template_reloads_total", "result", "failed"); n != 2 {
			t.Fatalf("failed = %v after 1s, want 2", n)
		}
		if err := os.WriteFile(marker, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second) // the second retry, 2s later, succeeds
		synctest.Wait()
		if n := f.count("pipeline_sink_template_reloads_total", "result", "ok"); n != 1 {
			t.Fatalf("reload ok = %v, want 1", n)
		}
		if f.health.State() != node.Healthy {
			t.Errorf("health %v %q after the reload succeeded", f.health.State(), f.health.Detail)
		}
		time.Sleep(time.Hour) // nothing more is retried
		synctest.Wait()
		if n := f.count("pipeline_sink_template_reloads_total"); n != 2 {
			t.Errorf("reloads after success: failed = %v", n)
		}
	})
}

func TestReloadBackoff(t *testing.T) {
	for attempt, want := range map[int]time.Duration{0: time.Second, 1: 2 * time.Second, 3: 8 * time.Second, 9: 5 * time.Minute, 100: 5 * time.Minute} {
		if got := reloadBackoff.Delay(attempt); got <= want/2 || got > want {
			t.Errorf("reloadBackoff.Delay(%d) = %v, want in (%v, %v]", attempt, got, want/2, want)
		}
	}
}

// A check or reload command that runs too long is stopped and fails.
func TestCommandTimeout(t *testing.T) {
	start := time.Now()
	err := runCommand(context.Background(), []string{"sleep", "10"}, "/x", 50*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("err %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
}

// Output kept from a command is bounded.
func TestOutputBounded(t *testing.T) {
	err := runCommand(context.Background(), []string{"sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x; exit 1"}, "/x", 10*time.Second)
	var ce *cmdError
	if !errors.As(err, &ce) || len(ce.output) > outputLimit+200 || !strings.Contains(ce.output, "truncated") {
		t.Errorf("error %v", err)
	}
}

// Reloads closer than reload_interval are spaced: the file is written at
// once, its reload waits until the interval since the last one passed.
func TestReloadsSpaced(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "reloads")
	count := func() int { b, _ := os.ReadFile(marker); return strings.Count(string(b), "x") }
	synctest.Test(t, func(t *testing.T) {
		f := open(t, serversTmpl+fmt.Sprintf(`reload_command = ["sh", "-c", "echo x >> %s"]`, marker))
		f.put("a", server("10.0.0.1", 80), full)
		time.Sleep(300 * time.Millisecond)
		f.put("b", server("10.0.0.2", 80), synced)
		if !strings.Contains(f.file(), "10.0.0.2") || count() != 1 {
			t.Fatalf("second write: file has b %v, %d reloads, want written and 1 reload", strings.Contains(f.file(), "10.0.0.2"), count())
		}
		time.Sleep(699 * time.Millisecond)
		synctest.Wait()
		if count() != 1 {
			t.Fatalf("reloaded before reload_interval passed")
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if count() != 2 {
			t.Fatalf("%d reloads 1s after the first, want 2", count())
		}
	})
}
