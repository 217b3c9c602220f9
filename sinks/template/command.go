package template

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// outputLimit bounds the output of a check or reload command kept for
// the log, /readyz and explain.
const outputLimit = 4096

// limitedBuffer keeps the first outputLimit bytes written to it.
type limitedBuffer struct {
	buf       bytes.Buffer
	truncated bool
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := outputLimit - l.buf.Len(); room < len(p) {
		l.truncated = true
		l.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return l.buf.Write(p)
}

func (l *limitedBuffer) String() string {
	s := strings.TrimSpace(l.buf.String())
	if l.truncated {
		s += " …(output truncated)"
	}
	return s
}

// errTimeout is a command that ran longer than its timeout.
var errTimeout = errors.New("timed out")

// cmdError is a command that failed: its program and why (exit status,
// timeout), with its output kept apart, for the caller decides whether
// the output may be shown (show_command_output).
type cmdError struct {
	prog   string
	err    error
	output string // the first outputLimit bytes, trimmed
}

func (e *cmdError) Error() string { return e.prog + ": " + e.err.Error() }

func (e *cmdError) Unwrap() error { return e.err }

// runCommand runs argv with {{path}} replaced by path, until it exits,
// timeout passes or ctx ends; a failure is a *cmdError. The command's
// process group is killed when it is stopped, and its pipes are given up
// a second later, so a child that keeps them open cannot hold the caller.
func runCommand(ctx context.Context, argv []string, path string, timeout time.Duration) error {
	args := make([]string, len(argv))
	for i, a := range argv {
		args[i] = strings.ReplaceAll(a, "{{path}}", path)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	var out limitedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if err == nil {
		return nil
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%w after %s", errTimeout, timeout)
	}
	return &cmdError{prog: argv[0], err: err, output: out.String()}
}

// pidFileLimit bounds a pid file: a number and a newline.
const pidFileLimit = 4096

// signalPid sends sig to the process whose id is the first line of
// pidFile, once it is sure that process is the one meant: the id is in
// range and not pipeline's own, and the process runs program. A pidfd
// holds the process from the check to the signal, so an id reused in
// between is never signalled.
func signalPid(pidFile, program string, sig syscall.Signal) error {
	d, err := readRegular(pidFile, pidFileLimit)
	if err != nil {
		return fmt.Errorf("pid file: %w", err)
	}
	if !d.existed {
		return fmt.Errorf("pid file %s: %w", pidFile, fs.ErrNotExist)
	}
	line, _, _ := strings.Cut(string(d.data), "\n")
	pid, err := parsePid(strings.TrimSpace(line))
	if err != nil {
		return fmt.Errorf("pid file %s: %w; nothing signalled", pidFile, err)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("pid %d (from %s): no such process", pid, pidFile)
		}
		return fmt.Errorf("pid %d (from %s): pidfd_open: %w", pid, pidFile, err)
	}
	defer unix.Close(fd)
	if err := runsProgram(pid, program); err != nil {
		return fmt.Errorf("pid %d (from %s): %w; not signalled", pid, pidFile, err)
	}
	if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("signal %s to pid %d (from %s): the process exited", sig, pid, pidFile)
		}
		return fmt.Errorf("signal %s to pid %d: %w", sig, pid, err)
	}
	return nil
}

// parsePid reads a process id that may be signalled: from 2 (1 is init)
// to the kernel's pid_max, and not pipeline's own. It never truncates: a
// value that would wrap to -1 (every process) or 0 (the caller's group)
// as a pid_t is out of range.
func parsePid(s string) (int, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		if len(s) > 32 {
			s = s[:32] + "…"
		}
		return 0, fmt.Errorf("%q is not a process id", s)
	}
	hi := pidMax()
	switch {
	case n < 2 || n > hi:
		return 0, fmt.Errorf("%d is not a process id from 2 to %d", n, hi)
	case n == int64(os.Getpid()):
		return 0, fmt.Errorf("%d is pipeline's own process id", n)
	}
	return int(n), nil
}

// pidMax is the kernel's largest process id (/proc/sys/kernel/pid_max),
// or the largest it can be configured to when that cannot be read.
func pidMax() int64 {
	const limit = 4 << 20 // PID_MAX_LIMIT on 64-bit kernels
	d, err := readRegular("/proc/sys/kernel/pid_max", 64)
	if err != nil || !d.existed {
		return limit
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(d.data)), 10, 64)
	if err != nil || n < 2 || n > limit {
		return limit
	}
	return n
}

// runsProgram checks that process pid runs program: the base name of its
// executable, or, when that cannot be read (another user's process), its
// name in comm (which the kernel cuts to 15 bytes).
func runsProgram(pid int, program string) error {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err == nil {
		base := filepath.Base(strings.TrimSuffix(exe, " (deleted)"))
		if base == program {
			return nil
		}
		return fmt.Errorf("it runs %s, not %s (pid_program)", base, program)
	}
	d, cerr := readRegular(fmt.Sprintf("/proc/%d/comm", pid), 64)
	if cerr != nil || !d.existed {
		return fmt.Errorf("cannot tell which program it runs: %w", err)
	}
	comm := strings.TrimSpace(string(d.data))
	if comm == program || (len(program) > 15 && comm == program[:15]) {
		return nil
	}
	return fmt.Errorf("it runs %q, not %s (pid_program)", comm, program)
}
