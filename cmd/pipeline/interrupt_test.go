package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// slowConfig takes long to load: a local comparing every pair of n
// numbers (n*n iterations, each cheap and allocating nothing the
// evaluation budget counts).
func slowConfig(n int) string {
	nums := make([]string, n)
	for i := range nums {
		nums[i] = strconv.Itoa(i)
	}
	return `
locals {
  r    = [` + strings.Join(nums, ",") + `]
  slow = [for i in local.r : length([for j in local.r : j if j == i])]
}
source "static" "s" {
  records = { a = { n = length(local.slow) } }
}
sink "log" "out" {
  input = source.static.s
  path  = "out.log"
}
`
}

// cpuTime is the processor time process pid has used, read from
// /proc/PID/stat (utime and stime, in clock ticks of 1/100 s).
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0 // exited
	}
	// The fields after the command's name, which ends in ")".
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	utime, _ := strconv.Atoi(f[11])
	stime, _ := strconv.Atoi(f[12])
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// TestInterruptWhileLoading: plan and validate of a configuration whose
// load takes minutes end within a few seconds of SIGTERM or SIGINT, with
// status 143 or 130, though loading never looks at a context.
func TestInterruptWhileLoading(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	bin, err := exec.LookPath("pipeline") // the test binary, installed by TestMain
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "slow.hcl")
	writeConfig(t, cfg, slowConfig(4000))
	for _, tc := range []struct {
		cmd    string
		sig    syscall.Signal
		status int
		twice  bool // a second signal ends the grace at once
	}{
		{"plan", syscall.SIGTERM, 143, false},
		{"plan", syscall.SIGINT, 130, false},
		{"validate", syscall.SIGTERM, 143, false},
		{"validate", syscall.SIGINT, 130, false},
		{"plan", syscall.SIGINT, 130, true},
	} {
		name := tc.cmd + "/" + tc.sig.String()
		if tc.twice {
			name += "/twice"
		}
		t.Run(name, func(t *testing.T) {
			var stderr bytes.Buffer
			c := exec.Command(bin, tc.cmd, cfg)
			c.Dir, c.Stderr = dir, &stderr
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- c.Wait() }()
			defer func() {
				_ = c.Process.Kill()
			}()
			// Loading has begun once the process used two seconds of
			// processor time: start-up takes a fraction of that.
			deadline := time.Now().Add(60 * time.Second)
			for cpuTime(t, c.Process.Pid) < 2*time.Second {
				select {
				case err := <-done:
					t.Fatalf("%s ended before the signal: %v\n%s", tc.cmd, err, stderr.String())
				default:
				}
				if time.Now().After(deadline) {
					t.Fatal("the process did not start loading within 60s")
				}
				time.Sleep(20 * time.Millisecond)
			}
			sent := time.Now()
			if err := c.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			limit := interruptGrace + 3*time.Second
			var again <-chan time.Time
			if tc.twice {
				// Two signals sent before the process took the first are
				// one: send it again until the process ends.
				tick := time.NewTicker(200 * time.Millisecond)
				defer tick.Stop()
				again, limit = tick.C, interruptGrace
			}
			timeout := time.After(10 * time.Second)
		wait:
			for {
				select {
				case err = <-done:
					break wait
				case <-again:
					_ = c.Process.Signal(tc.sig)
				case <-timeout:
					t.Fatalf("%s still running 10s after %s\n%s", tc.cmd, tc.sig, stderr.String())
				}
			}
			took := time.Since(sent)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.status {
				t.Fatalf("%s after %s: %v, want exit status %d\n%s", tc.cmd, tc.sig, err, tc.status, stderr.String())
			}
			if took > limit {
				t.Errorf("%s exited %s after %s, want within %s", tc.cmd, took, tc.sig, limit)
			}
			want := fmt.Sprintf("Interrupted (%s): %s stopped, nothing written.\n", map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM"}[tc.sig], tc.cmd)
			if stderr.String() != want {
				t.Errorf("stderr %q, want %q", stderr.String(), want)
			}
			if _, err := os.Stat(filepath.Join(dir, "out.log")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s wrote out.log: %v", tc.cmd, err)
			}
		})
	}
}
