package files

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/internal/kobject"
)

// faultRun is a run fed by direct reload calls, without a watcher.
type faultRun struct {
	*run
	out    *nodetest.Output
	health *nodetest.HealthRecorder
}

func newFaultRun(t *testing.T, dir, body string) faultRun {
	t.Helper()
	s := mustBuild(t, dir, body+"\npoll_interval = \"0s\"")
	env, health := nodetest.Env(t, prometheus.NewRegistry())
	m, err := kobject.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	out := nodetest.NewOutput()
	return faultRun{run: &run{src: s, env: env, out: out, m: m}, out: out, health: health}
}

// reloadWithin fails the test when one reload takes longer than a FIFO or
// /dev/zero could make it last unbounded (seconds, not the nanoseconds
// a regular read takes: this only catches a hang).
func (f faultRun) reloadWithin(t *testing.T) {
	t.Helper()
	done := make(chan struct{})
	go func() { f.reload(context.Background()); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("reload hangs")
	}
}

// Special files matched by a glob are refused by name, never opened for a
// blocking read or read without end.
func TestSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "m", "a.yaml"), pod("a", "web"))
	if err := syscall.Mkfifo(filepath.Join(dir, "m", "fifo.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "m", "zero.yaml")); err != nil {
		t.Fatal(err)
	}
	f := newFaultRun(t, dir, `paths = ["m/*.yaml"]`)
	f.reloadWithin(t)
	if diff := cmp.Diff([]string{"shop/a"}, f.out.Keys()); diff != "" {
		t.Errorf("keys (-want +got)\n%s", diff)
	}
	if !f.out.Synced() || f.health.State() != node.Degraded {
		t.Errorf("synced %v, health %s", f.out.Synced(), f.health.State())
	}
	for _, want := range []string{"fifo.yaml is not a regular file (a FIFO)", "zero.yaml is not a regular file (a character device)"} {
		if !strings.Contains(f.health.Detail, want) {
			t.Errorf("health detail %q lacks %q", f.health.Detail, want)
		}
	}
}

// A file edited into invalid YAML keeps its last good content, and the
// source says so; once fixed, the new content is published.
func TestFileTurnedInvalid(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m", "a.yaml")
	write(t, path, pod("a", "web")+"---\n"+pod("b", "web"))
	write(t, filepath.Join(dir, "m", "new.yaml"), "kind: [broken\n") // never good: nothing to keep
	f := newFaultRun(t, dir, `paths = ["m/*.yaml"]`)
	f.reloadWithin(t)
	write(t, path, "apiVersion: v1\nkind: Pod\nmetadata: {name: [oops\n")
	f.reloadWithin(t)
	if diff := cmp.Diff([]string{"shop/a", "shop/b"}, f.out.Keys()); diff != "" {
		t.Errorf("keys after the bad edit (-want +got)\n%s", diff)
	}
	if f.health.State() != node.Degraded || !strings.Contains(f.health.Detail, "a.yaml:3 does not parse") {
		t.Errorf("health %s %q", f.health.State(), f.health.Detail)
	}
	write(t, path, pod("c", "web"))
	f.reloadWithin(t)
	if diff := cmp.Diff([]string{"shop/c"}, f.out.Keys()); diff != "" {
		t.Errorf("keys after the fix (-want +got)\n%s", diff)
	}
	if f.health.State() != node.Healthy {
		t.Errorf("health %s %q after the fix", f.health.State(), f.health.Detail)
	}
}

// A directory that disappears empties nothing unless allow_empty says an
// empty match is fine.
func TestDirectoryRemoved(t *testing.T) {
	for _, allowEmpty := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "allow_empty"}[allowEmpty], func(t *testing.T) {
			dir := t.TempDir()
			write(t, filepath.Join(dir, "m", "a.yaml"), pod("a", "web"))
			body := `paths = ["m/*.yaml"]`
			if allowEmpty {
				body += "\nallow_empty = true"
			}
			f := newFaultRun(t, dir, body)
			f.reloadWithin(t)
			if err := os.RemoveAll(filepath.Join(dir, "m")); err != nil {
				t.Fatal(err)
			}
			f.reloadWithin(t)
			want, state := []string{"shop/a"}, node.Degraded
			if allowEmpty {
				want, state = nil, node.Healthy
			}
			if diff := cmp.Diff(want, f.out.Keys(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("keys (-want +got)\n%s", diff)
			}
			if f.health.State() != state {
				t.Errorf("health %s %q, want %s", f.health.State(), f.health.Detail, state)
			}
		})
	}
}

// At start, a pattern that matches nothing leaves the source unsynced (so
// no sink prunes what an earlier run wrote) until a file appears.
func TestNothingMatchesAtStart(t *testing.T) {
	dir := t.TempDir()
	f := newFaultRun(t, dir, `paths = ["m/*.yaml"]`)
	f.reloadWithin(t)
	if f.out.Synced() || f.health.State() != node.Down || !strings.Contains(f.health.Detail, "allow_empty") {
		t.Fatalf("synced %v, health %s %q", f.out.Synced(), f.health.State(), f.health.Detail)
	}
	write(t, filepath.Join(dir, "m", "a.yaml"), pod("a", "web"))
	f.reloadWithin(t)
	if !f.out.Synced() || f.health.State() != node.Healthy || len(f.out.Keys()) != 1 {
		t.Fatalf("synced %v, health %s, keys %v", f.out.Synced(), f.health.State(), f.out.Keys())
	}
}

// A file that matched but cannot be read at start (over the size limit) is
// an input not read, not an empty one: the source does not sync (so no
// sink prunes or renders an empty set), says why, counts it, and syncs
// once the file is read. Later, the same fault keeps the last good content.
func TestUnreadableAtStart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m", "a.yaml")
	write(t, path, pod("a", "web")+strings.Repeat("#", maxFileSize))
	f := newFaultRun(t, dir, `paths = ["m/*.yaml"]`)
	err := f.reload(context.Background())
	if err == nil || !strings.Contains(err.Error(), "a.yaml holds more than the 16777216 bytes allowed") {
		t.Errorf("first reload: %v, want the file named", err)
	}
	if f.out.Synced() || len(f.out.Keys()) != 0 {
		t.Errorf("synced %v with %v before the file was read", f.out.Synced(), f.out.Keys())
	}
	if f.health.State() != node.Degraded || !strings.Contains(f.health.Detail, "not synced: cannot read") {
		t.Errorf("health %s %q", f.health.State(), f.health.Detail)
	}
	if n := testutil.ToFloat64(f.m.Skipped.WithLabelValues(reasonUnreadable)); n != 1 {
		t.Errorf("skipped{reason=unreadable} = %v, want 1", n)
	}
	write(t, path, pod("a", "web"))
	if err := f.reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !f.out.Synced() || cmp.Diff([]string{"shop/a"}, f.out.Keys()) != "" {
		t.Errorf("after the fix: synced %v, keys %v", f.out.Synced(), f.out.Keys())
	}
	write(t, path, pod("b", "web")+strings.Repeat("#", maxFileSize))
	if err := f.reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"shop/a"}, f.out.Keys()); diff != "" || f.health.State() != node.Degraded {
		t.Errorf("grown later: health %s, keys (-want +got)\n%s", f.health.State(), diff)
	}
}

// cancelAfter is a context whose Err turns to Canceled after n calls: it
// ends a parse at a known point, with no timing involved.
type cancelAfter struct {
	context.Context
	n *int
}

func (c cancelAfter) Err() error {
	if *c.n--; *c.n < 0 {
		return context.Canceled
	}
	return nil
}

// A reload stops parsing when its context ends (SIGTERM during a huge
// file), in every format, and publishes nothing.
func TestReloadCancelled(t *testing.T) {
	rows := strings.Repeat("1,2\n", 50_000)
	for format, content := range map[string]string{
		"csv":   "a,b\n" + rows,
		"lines": rows,
		"jsonl": strings.Repeat("{\"a\":1}\n", 50_000),
		"json":  "[" + strings.Repeat("{\"a\":1},", 50_000) + "{\"a\":1}]",
		"yaml":  strings.Repeat("---\na: 1\n", 50_000),
	} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			write(t, filepath.Join(dir, "f"), content)
			key := "item.a"
			if format == "lines" {
				key = "item"
			}
			f := newFaultRun(t, dir, "paths = [\"f\"]\nformat = \""+format+"\"\nkey = "+key)
			calls := 100
			if err := f.reload(cancelAfter{context.Background(), &calls}); err != nil {
				t.Fatal(err)
			}
			if calls > 0 {
				t.Errorf("the parse checked its context %d times, fewer than once per item", 100-calls)
			}
			if f.out.Synced() || len(f.out.Keys()) != 0 {
				t.Errorf("a cancelled reload published: synced %v, %d keys", f.out.Synced(), len(f.out.Keys()))
			}
		})
	}
}

// YAML aliases that expand to far more values than the document holds
// (billion laughs) are refused at the YAML library's own ratio, before
// they are built; a merge key's or an alias's ordinary use is not.
func TestYAMLAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	b.WriteString("id: bomb\n")
	dir := t.TempDir()
	write(t, filepath.Join(dir, "f"), b.String())
	s := mustBuild(t, dir, "paths = [\"f\"]\nformat = \"yaml\"\nkey = item.id")
	done := make(chan []skip, 1)
	go func() { _, _, skips := s.records(s.read().files); done <- skips }()
	select {
	case skips := <-done:
		if len(skips) != 1 || !strings.Contains(skips[0].err.Error(), "aliases expand to too many values") {
			t.Errorf("skips %v", skips)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the aliases are being expanded")
	}
}
