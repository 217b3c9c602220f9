package files

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// inotifyInstances counts this process's inotify instances: Linux allows
// 128 per user by default.
func inotifyInstances(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("count inotify instances: %v", err)
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.Contains(target, "inotify") {
			n++
		}
	}
	return n
}

// A thousand sources in one configuration all run, sync and see their
// changes through one inotify instance (a watcher each failed at about
// 125 sources: "too many open files").
func TestThousandSources(t *testing.T) {
	defer goleak.VerifyNone(t)
	const n = 1000
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	outs := make([]*nodetest.Output, n)
	done := make(chan error, n)
	for i := range n {
		sub := fmt.Sprintf("s%04d", i)
		write(t, filepath.Join(dir, sub, "a.lines"), sub+"\n")
		s := mustBuild(t, dir, fmt.Sprintf("paths = [%q]\nformat = \"lines\"\npoll_interval = \"0s\"", sub+"/*.lines"))
		env, _ := nodetest.Env(t, prometheus.NewRegistry())
		outs[i] = nodetest.NewOutput()
		go func() { done <- s.Run(ctx, env, outs[i]) }()
	}
	stopped := 0
	defer func() {
		cancel()
		for ; stopped < n; stopped++ {
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			select {
			case err := <-done:
				stopped++
				t.Fatalf("a source stopped while waiting for %s: %v", what, err)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	waitFor("every source synced", func() bool {
		for _, o := range outs {
			if !o.Synced() {
				return false
			}
		}
		return true
	})
	if got := inotifyInstances(t); got > 1 {
		t.Errorf("%d inotify instances for %d sources, want 1", got, n)
	}
	const changed = 777
	write(t, filepath.Join(dir, fmt.Sprintf("s%04d", changed), "b.lines"), "extra\n")
	waitFor("the change seen by its source", func() bool { return len(outs[changed].Keys()) == 2 })
	if keys := outs[changed+1].Keys(); len(keys) != 1 {
		t.Errorf("a neighbour source holds %v", keys)
	}
}

// Plan runs a source one-shot: it reads and syncs with no inotify
// instance at all.
func TestOneShotWatchesNothing(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.lines"), "a\n")
	s := mustBuild(t, dir, `paths = ["*.lines"]`+"\nformat = \"lines\"")
	env, _ := nodetest.Env(t, prometheus.NewRegistry())
	env.OneShot = true
	out := nodetest.NewOutput()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, env, out) }()
	for !out.Synced() {
		select {
		case <-out.Changed():
		case err := <-done:
			t.Fatalf("Run: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatal("not synced")
		}
	}
	if n := inotifyInstances(t); n != 0 {
		t.Errorf("%d inotify instances in a one-shot run", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
}

// A file that matched but all of whose items were skipped is not "nothing
// matched": the source is degraded and says what it skipped (plan shows it).
func TestAllSkippedIsDegraded(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.json"), `[{"id":null}]`)
	f := newFaultRun(t, dir, "paths = [\"a.json\"]\nformat = \"json\"\nkey = item.id")
	if err := f.reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !f.out.Synced() || f.health.State() != node.Degraded || !strings.Contains(f.health.Detail, "1 input(s) read, all skipped; the first: "+filepath.Join(dir, "a.json")+":1 item 0: key is null") {
		t.Errorf("synced %v, health %s %q", f.out.Synced(), f.health.State(), f.health.Detail)
	}
}
