package template

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/haproxytest"
)

// reload_signal reloads the real HAProxy (master-worker) named by
// pid_file: its master replaces its worker.
func TestReloadSignalHAProxy(t *testing.T) {
	haproxy := haproxytest.Binary(t)
	f := open(t, serversTmpl+"reload_signal = \"SIGUSR2\"\npid_file = \"DIR/haproxy.pid\"\nreload_interval = \"0s\"")
	pidFile := filepath.Join(filepath.Dir(f.path), "haproxy.pid")
	f.put("a", server("10.0.0.1", 80), full) // the pid file is not there yet: the reload fails
	if out, err := exec.Command(haproxy, "-W", "-D", "-q", "-f", f.path, "-p", pidFile).CombinedOutput(); err != nil {
		t.Fatalf("start haproxy: %v\n%s", err, out)
	}
	master := readPid(t, pidFile)
	t.Cleanup(func() { _ = syscall.Kill(master, syscall.SIGTERM) })
	before := waitChildren(t, master, "", 10*time.Second)
	// HAProxy ignores a SIGUSR2 that comes while its worker is still
	// starting: change the file again until one lands.
	for i := range 5 {
		f.put(fmt.Sprint("b", i), server("10.0.0.2", 80+i), synced)
		if f.health.State() != node.Healthy {
			t.Fatalf("health %v %q after a write", f.health.State(), f.health.Detail)
		}
		if after := waitChildren(t, master, before, 2*time.Second); after != before {
			return
		}
	}
	t.Errorf("haproxy's worker is still %s after SIGUSR2", before)
}

// readPid waits for the pid file HAProxy writes once it started.
func readPid(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
		if err == nil {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid file %s: %q", path, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitChildren waits until process pid has children other than not, and
// returns them.
func waitChildren(t *testing.T, pid int, not string, wait time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
		if c := strings.TrimSpace(string(b)); c != "" && c != not {
			return c
		}
		if time.Now().After(deadline) {
			return not
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A pid file naming a process that runs another program than
// pid_program (a stale pid file whose id was reused) signals nothing.
func TestStalePidNotSignalled(t *testing.T) {
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = sleep.Wait(); close(exited) }()
	t.Cleanup(func() { _ = sleep.Process.Kill(); <-exited })
	f := open(t, serversTmpl+"reload_signal = \"SIGUSR2\"\npid_file = \"DIR/pid\"\nreload_interval = \"0s\"")
	if err := os.WriteFile(filepath.Join(filepath.Dir(f.path), "pid"), fmt.Appendf(nil, "%d\n", sleep.Process.Pid), 0o644); err != nil {
		t.Fatal(err)
	}
	f.put("a", server("10.0.0.1", 80), full)
	select {
	case <-exited:
		t.Fatalf("the stale pid's process was signalled: %v", waitErr)
	case <-time.After(300 * time.Millisecond):
	}
	if f.health.State() != node.Degraded || !strings.Contains(f.health.Detail, "runs sleep, not haproxy") {
		t.Errorf("health %v %q", f.health.State(), f.health.Detail)
	}
}

// Process ids that are not one live process of the program meant are
// refused before anything is signalled: values that wrap to -1 or 0 as a
// pid_t, 0, 1, negatives, pipeline's own id, garbage.
func TestPidRange(t *testing.T) {
	for _, s := range []string{"4294967295", "4294967296", "0", "1", "-1", "-4294967295", strconv.Itoa(os.Getpid()),
		"99999999999999999999", "abc", "", "12 34"} {
		if pid, err := parsePid(s); err == nil {
			t.Errorf("parsePid(%q) = %d, want an error", s, pid)
		}
	}
	if pid, err := parsePid("2"); err != nil || pid != 2 {
		t.Errorf("parsePid(2) = %d, %v", pid, err)
	}
}

// A pid file that is a FIFO, or a link to /dev/zero, fails at once: it
// is never read (which would block, or run out of memory).
func TestPidFileNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo, zero := filepath.Join(dir, "fifo"), filepath.Join(dir, "zero")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, zero} {
		done := make(chan error, 1)
		go func() { done <- signalPid(p, "haproxy", syscall.SIGUSR2) }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%s: %v", filepath.Base(p), err)
			}
		case <-time.After(5 * time.Second):
			// Unblock the old reader so the test can end.
			if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
			t.Fatalf("%s: reading the pid file blocked", filepath.Base(p))
		}
	}
}
