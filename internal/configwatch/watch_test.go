package configwatch

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// run starts Run and returns a counter of reports and a stop function.
func run(t *testing.T, o Options) (*atomic.Int32, func()) {
	t.Helper()
	var n atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o, func() { n.Add(1) }) }()
	return &n, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

// A burst of events is one report, after the directory was quiet. The
// debounce is long against the burst (writes with no pause between them),
// so that a loaded machine cannot stretch the burst past it, and every
// wait is a poll with a deadline.
func TestDebounce(t *testing.T) {
	defer goleak.VerifyNone(t)
	const debounce = time.Second
	dir := t.TempDir()
	n, stop := run(t, Options{Dirs: []string{dir}, Debounce: debounce})
	defer stop()
	p := filepath.Join(dir, "p.hcl")
	write := func(b byte) {
		if err := os.WriteFile(p, []byte{b}, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A first write reported says the watch is set (written again if it
	// came before the watch).
	for try := 0; n.Load() == 0; try++ {
		if try == 5 {
			t.Fatal("no report for a write")
		}
		write(0xff)
		waitReports(t, n, 1, 3*debounce)
	}
	time.Sleep(debounce / 2) // nothing more comes of the first write
	n.Store(0)
	for i := range 5 {
		write(byte(i))
	}
	if got := n.Load(); got != 0 {
		t.Fatalf("%d reports during the burst", got)
	}
	waitReports(t, n, 1, 10*debounce)
	time.Sleep(debounce + debounce/2)
	if got := n.Load(); got != 1 {
		t.Fatalf("%d reports after the burst, want 1", got)
	}
}

// waitReports polls until n reaches want or d has passed.
func waitReports(t *testing.T, n *atomic.Int32, want int32, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); n.Load() < want && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
}

// Where inotify cannot watch, Run polls the hash and reports each change once.
func TestPollingFallback(t *testing.T) {
	defer goleak.VerifyNone(t)
	var h atomic.Value
	h.Store("a")
	hash := func() (string, error) { return h.Load().(string), nil }
	missing := filepath.Join(t.TempDir(), "gone")
	n, stop := run(t, Options{Dirs: []string{missing}, Interval: 10 * time.Millisecond, Hash: hash})
	defer stop()
	time.Sleep(50 * time.Millisecond)
	if got := n.Load(); got != 0 {
		t.Fatalf("%d reports with no change", got)
	}
	h.Store("b")
	deadline := time.Now().Add(2 * time.Second)
	for n.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	if got := n.Load(); got != 1 {
		t.Fatalf("%d reports for one change, want 1", got)
	}
}

func TestHashAndDirs(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.hcl"), filepath.Join(dir, "b.hcl")
	for _, f := range []string{a, b} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h1, err := Hash([]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if h2, _ := Hash([]string{a}); h2 == h1 {
		t.Error("a file removed leaves the hash unchanged")
	}
	if err := os.WriteFile(b, []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	if h3, _ := Hash([]string{a, b}); h3 == h1 {
		t.Error("a content change leaves the hash unchanged")
	}
	if _, err := Hash([]string{filepath.Join(dir, "missing.hcl")}); err == nil {
		t.Error("no error for a missing file")
	}
	if got := Dirs([]string{a, dir, b}); len(got) != 1 || got[0] != dir {
		t.Errorf("Dirs = %v, want [%s]", got, dir)
	}
}

// A file that is not configuration (a log written next to it, an
// editor's swap file) triggers nothing; the configuration file does, and
// so does a ConfigMap's "..data" swap.
func TestRelevant(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir, cfgDir := t.TempDir(), t.TempDir()
	cfg := filepath.Join(dir, "p.hcl")
	if err := os.WriteFile(cfg, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	paths := []string{cfg, cfgDir}
	rel := Relevant(paths)
	for name, want := range map[string]bool{
		cfg: true, filepath.Join(dir, "out.log"): false, filepath.Join(dir, ".p.hcl.swp"): false,
		filepath.Join(dir, "other.hcl"): false, filepath.Join(dir, "..data"): true,
		filepath.Join(cfgDir, "a.hcl"): true, filepath.Join(cfgDir, "a.test.hcl"): false,
		filepath.Join(cfgDir, "notes.txt"): false, filepath.Join(cfgDir, "..2026_11_24_01_00_00.1"): true,
		cfgDir: true, "/elsewhere/p.hcl": false,
	} {
		if got := rel(name); got != want {
			t.Errorf("Relevant(%s) = %v, want %v", name, got, want)
		}
	}
	n, stop := run(t, Options{Dirs: Dirs(paths), Debounce: 50 * time.Millisecond, Relevant: rel})
	defer stop()
	time.Sleep(20 * time.Millisecond) // the watch is set
	for i := range 5 {
		if err := os.WriteFile(filepath.Join(dir, "out.log"), []byte{byte(i)}, 0o644); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if got := n.Load(); got != 0 {
		t.Fatalf("%d reports for a log file written beside the configuration", got)
	}
	if err := os.WriteFile(cfg, []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for n.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := n.Load(); got != 1 {
		t.Fatalf("%d reports for a configuration write, want 1", got)
	}
}

// An edit made before the watch was set is reported once the watch is
// set, when the caller says what it loaded (Baseline); an unedited
// configuration reports nothing.
func TestBaseline(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	hash := func() (string, error) { return Hash([]string{filepath.Join(dir, "p.hcl")}) }
	if err := os.WriteFile(filepath.Join(dir, "p.hcl"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	loaded, err := hash()
	if err != nil {
		t.Fatal(err)
	}
	n, stop := run(t, Options{Dirs: []string{dir}, Hash: hash, Baseline: loaded})
	time.Sleep(50 * time.Millisecond)
	stop()
	if got := n.Load(); got != 0 {
		t.Fatalf("%d reports for an unedited configuration", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "p.hcl"), []byte("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	n, stop = run(t, Options{Dirs: []string{dir}, Hash: hash, Baseline: loaded})
	defer stop()
	deadline := time.Now().Add(2 * time.Second)
	for n.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := n.Load(); got != 1 {
		t.Fatalf("%d reports for an edit made before the watch, want 1", got)
	}
}
