package template

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
)

// within fails the test when fn runs longer than d (it would block).
func within(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s still running after %s", what, d)
	}
}

// A path that is /dev/zero (through a link) or a FIFO is refused at
// once by run (Actual, Commit) and plan (PlanFile): never read whole,
// never waited on.
func TestPathNotRegular(t *testing.T) {
	for _, kind := range []string{"dev-zero", "fifo"} {
		t.Run(kind, func(t *testing.T) {
			f := open(t, serversTmpl)
			if kind == "fifo" {
				if err := syscall.Mkfifo(f.path, 0o644); err != nil {
					t.Fatal(err)
				}
				// Unblock an old reader at the end so the test can end.
				t.Cleanup(func() {
					if w, err := os.OpenFile(f.path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
						w.Close()
					}
				})
			} else if err := os.Symlink("/dev/zero", f.path); err != nil {
				t.Fatal(err)
			}
			within(t, 5*time.Second, "Actual", func() {
				if _, err := f.tg.Actual(context.Background()); err == nil || !strings.Contains(err.Error(), "not a regular file") {
					t.Errorf("Actual: %v", err)
				}
			})
			within(t, 5*time.Second, "Commit", func() { f.put("a", server("10.0.0.1", 80), full) })
			if !strings.Contains(f.health.Detail, "not a regular file") {
				t.Errorf("health %q", f.health.Detail)
			}
			within(t, 5*time.Second, "PlanFile", func() {
				_, err := f.tg.PlanFile(context.Background(), []node.Entry{{Key: "a", Value: server("10.0.0.1", 80)}})
				if err == nil || !strings.Contains(err.Error(), "not a regular file") {
					t.Errorf("PlanFile: %v", err)
				}
			})
		})
	}
}

// A backup never widens access: a 0600 file's backup is 0600, and a path
// that is a link to a 0600 file is backed up as a link, its target's
// content never copied into a new file.
func TestBackupKeepsAccess(t *testing.T) {
	f := open(t, serversTmpl+"backup = true")
	if err := os.WriteFile(f.path, []byte("secret v1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.put("a", server("10.0.0.1", 80), full)
	fi, err := os.Stat(f.path + ".bak")
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup of a 0600 file: %v %v", fi.Mode(), err)
	}
	private := filepath.Join(t.TempDir(), "private")
	if err := os.WriteFile(private, []byte("private key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(f.path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(private, f.path); err != nil {
		t.Fatal(err)
	}
	f.put("b", server("10.0.0.2", 80), full)
	li, err := os.Lstat(f.path + ".bak")
	if err != nil || li.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("backup of a link: %v %v, want a link", li.Mode(), err)
	}
	if target, _ := os.Readlink(f.path + ".bak"); target != private {
		t.Errorf("backup links to %q, want %q", target, private)
	}
	if b, _ := os.ReadFile(private); string(b) != "private key\n" {
		t.Errorf("the link's target changed: %q", b)
	}
}

// A failed backup leaves no temporary file behind, on any attempt.
func TestFailedBackupLeavesNoTemp(t *testing.T) {
	f := open(t, serversTmpl+"backup = true")
	f.put("a", server("10.0.0.1", 80), full)
	if err := os.MkdirAll(filepath.Join(f.path+".bak", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		key := node.Key(fmt.Sprint("b", i))
		err := f.round([]node.Entry{{Key: key, Value: server("10.0.0.2", 80)}}, synced)[key]
		if err == nil || !strings.Contains(err.Error(), "backup") {
			t.Fatalf("attempt %d: %v, want the backup's failure", i, err)
		}
	}
	if names, _ := filepath.Glob(filepath.Join(filepath.Dir(f.path), ".*.tmp")); len(names) > 0 {
		t.Errorf("temporary files left: %v", names)
	}
}

// format with a width Go's fmt cannot honour is a render error, not
// Go's error text written into the file.
func TestFormatHugeWidth(t *testing.T) {
	f := open(t, `template = "%{ for r in records }${format("%01000000000d", 1)}%{ endfor }"`)
	batch := []node.Entry{{Key: "a", Value: cty.EmptyObjectVal}}
	f.tg.Update(context.Background(), batch)
	f.tg.Commit(context.Background(), full)
	if _, err := os.Stat(f.path); !os.IsNotExist(err) {
		b, _ := os.ReadFile(f.path)
		t.Fatalf("file written: %.80q", b)
	}
	if !strings.Contains(f.health.Detail, "larger than") {
		t.Errorf("health %q, want the render error", f.health.Detail)
	}
}

// A render larger than max_size is refused, not written, and stops
// early: nested loops over 3,000 records would render 9 million lines.
// So it does through the fast path and through HCL (a function call).
func TestMaxSize(t *testing.T) {
	// HCL evaluates each interpolation with garbage of its own: its bound
	// is on what it allocates in all, which the whole render through HCL
	// would pass many times over.
	for name, c := range map[string]struct {
		body  string
		alloc uint64
	}{
		"fast": {`${a.key}-${b.key}\n`, 64 << 20},
		"hcl":  {`${upper(a.key)}-${b.key}\n`, 512 << 20},
	} {
		t.Run(name, func(t *testing.T) {
			f := open(t, `template = "%{ for a in records }%{ for b in records }`+c.body+`%{ endfor }%{ endfor }"`+"\nmax_size = \"1MiB\"")
			batch := make([]node.Entry, 3000)
			for i := range batch {
				batch[i] = node.Entry{Key: node.Key(fmt.Sprintf("k%05d", i)), Value: cty.EmptyObjectVal}
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			failed := f.round(batch, full)
			runtime.ReadMemStats(&after)
			if len(failed) != len(batch) {
				t.Errorf("%d entries failed, want all %d", len(failed), len(batch))
			}
			if _, err := os.Stat(f.path); !os.IsNotExist(err) {
				t.Fatal("an oversize render was written")
			}
			if !strings.Contains(f.health.Detail, "max_size") {
				t.Errorf("health %q", f.health.Detail)
			}
			if n := f.count("pipeline_sink_template_renders_total", "result", "refused"); n != 1 {
				t.Errorf("renders_total{refused} = %v", n)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > c.alloc {
				t.Errorf("the render allocated %d MiB before it stopped", alloc>>20)
			}
			// The entries' retry says why, without rendering again.
			err := f.round(batch[:1], synced)[batch[0].Key]
			if !strings.Contains(fmt.Sprint(err), "max_size") {
				t.Errorf("entry error %v", err)
			}
			if n := f.count("pipeline_sink_template_renders_total", "result", "refused"); n != 1 {
				t.Errorf("renders_total{refused} = %v after the retry, want no second render", n)
			}
		})
	}
}

// A check that times out leaves the entries it concerned failing with
// the timeout, and the file holding (Actual) only what it held. The
// timeout is long enough that the check of a's render, which finishes at
// once, never meets it on a loaded machine.
func TestCheckTimeoutIsTheEntrysError(t *testing.T) {
	f := open(t, serversTmpl+`check_command = ["sh", "-c", "grep -q 10.0.0.9 \"$0\" && sleep 10; exit 0", "{{path}}"]`+"\ncheck_timeout = \"2s\"")
	f.put("a", server("10.0.0.1", 80), full)
	batch := []node.Entry{{Key: "slow", Value: server("10.0.0.9", 80)}}
	if err := f.round(batch, synced)["slow"]; err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("entry error %v, want the timeout", err)
	}
	actual, err := f.tg.Actual(context.Background())
	if err != nil || len(actual) != 1 || actual[0].Key != "a" {
		t.Errorf("Actual %v %v, want only a", actual, err)
	}
	// A timeout is not the candidate's fault: the retry checks again.
	f.round(batch, synced)
	if n := f.count("pipeline_sink_template_checks_total", "result", "failed"); n != 2 {
		t.Errorf("checks failed = %v, want the retry checked again", n)
	}
}

// Actual is what the file holds: the entries of the render on disk, none
// once someone else edited it.
func TestActualReadsTheFile(t *testing.T) {
	f := open(t, serversTmpl+`check_command = ["sh", "-c", "! grep -q 10.0.0.9 \"$0\"", "{{path}}"]`)
	f.put("a", server("10.0.0.1", 80), full)
	if err := f.round([]node.Entry{{Key: "bad", Value: server("10.0.0.9", 80)}}, synced)["bad"]; err == nil {
		t.Fatal("a refused entry succeeded")
	}
	got, err := f.tg.Actual(context.Background())
	if err != nil || len(got) != 1 || got[0].Key != "a" {
		t.Errorf("Actual after a refused render: %v %v, want a only", got, err)
	}
	if err := os.WriteFile(f.path, []byte("edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := f.tg.Actual(context.Background()); err != nil || len(got) != 0 {
		t.Errorf("Actual of a file edited by hand: %v %v, want nothing", got, err)
	}
}

// A hung reload never blocks the sink loop: the retry loop runs it with
// no lock held, and a write meanwhile returns at once.
func TestHungReloadDoesNotBlock(t *testing.T) {
	dir := t.TempDir()
	marker, started := filepath.Join(dir, "go"), filepath.Join(dir, "started")
	f := open(t, serversTmpl+fmt.Sprintf(`reload_command = ["sh", "-c", "test -e %s || exit 1; touch %s; sleep 30"]`, marker, started)+
		"\nreload_timeout = \"60s\"\nreload_interval = \"0s\"")
	f.put("a", server("10.0.0.1", 80), full) // fails: retried in 1s
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the retry never ran")
		}
		time.Sleep(10 * time.Millisecond)
	}
	within(t, 5*time.Second, "a write during a hung reload", func() { f.put("b", server("10.0.0.2", 80), synced) })
	within(t, 5*time.Second, "Explain during a hung reload", func() { f.tg.Explain("b") })
	if !strings.Contains(f.file(), "10.0.0.2") {
		t.Error("the write waited for the reload")
	}
	within(t, 10*time.Second, "Close", func() { _ = f.tg.Close() })
}
