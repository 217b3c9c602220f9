package template

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
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

// runCommand runs argv with {{path}} replaced by path, within timeout. The
// error holds the exit status and the command's combined output, bounded.
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
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if err == nil {
		return nil
	}
	if ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("timed out after %s", timeout)
	}
	if o := out.String(); o != "" {
		return fmt.Errorf("%s: %w: %s", argv[0], err, o)
	}
	return fmt.Errorf("%s: %w", argv[0], err)
}

// signalPid sends sig to the process whose id is the first line of pidFile.
func signalPid(pidFile string, sig syscall.Signal) error {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return fmt.Errorf("read pid file: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return fmt.Errorf("pid file %s: %q is not a process id", pidFile, strings.TrimSpace(line))
	}
	if err := syscall.Kill(pid, sig); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("signal %s to pid %d (from %s): no such process", sig, pid, pidFile)
		}
		return fmt.Errorf("signal %s to pid %d: %w", sig, pid, err)
	}
	return nil
}
