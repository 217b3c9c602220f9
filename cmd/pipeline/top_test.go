package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pipeline/pipeline/cmd/pipeline/inspect"
)

// openPTY opens a pseudo-terminal pair: what top writes to the second
// file, a terminal, comes out of the first.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		missingInCI(t, "no pseudo-terminals here (/dev/ptmx: %v)", err)
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pty: %v", err)
	}
	t.Cleanup(func() { tty.Close(); master.Close() })
	return master, tty
}

// TestTopRendersInTerminal runs top on a real pseudo-terminal against a
// running pipeline: frames are redrawn in place, states coloured, every
// node has a row, and the second frame has rates.
func TestTopRendersInTerminal(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	addr, pods, _ := startFilesPipeline(t)
	master, tty := openPTY(t)
	var mu sync.Mutex
	var screen bytes.Buffer
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			mu.Lock()
			screen.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	writePods(t, pods, "10.0.0.1", "10.0.0.2")
	if err := inspect.Top(ctx, tty, inspect.TopOptions{Against: addr, Interval: 300 * time.Millisecond, Count: 3}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		s := screen.String()
		mu.Unlock()
		if strings.Count(s, "pipeline top") == 3 || time.Now().After(deadline) {
			checkTopScreen(t, s)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func checkTopScreen(t *testing.T, s string) {
	t.Helper()
	if n := strings.Count(s, "\x1b[H\x1b[2J"); n != 3 {
		t.Errorf("%d in-place redraws for 3 frames:\n%q", n, s)
	}
	last := s[strings.LastIndex(s, "\x1b[H\x1b[2J"):]
	for _, want := range []string{"NODE", "IN/s", "LAT", "source.files.pods", "transform.extract.ips", "sink.log.out", "\x1b[32mhealthy\x1b[0m", " ready "} {
		if !strings.Contains(last, want) {
			t.Errorf("last frame lacks %q:\n%s", want, last)
		}
	}
	// Columns line up with the header once colour codes are removed, and
	// a sink shows the entries its target holds.
	plain := strings.NewReplacer("\x1b[32m", "", "\x1b[33m", "", "\x1b[31m", "", "\x1b[0m", "").Replace(last)
	col := -1
	for _, line := range strings.Split(plain, "\n") {
		switch {
		case strings.HasPrefix(line, "NODE"):
			col = strings.Index(line, "STATE")
		case col > 0 && strings.HasPrefix(line, "sink.log.out"):
			if got := strings.Index(line, "healthy"); got != col {
				t.Errorf("state at column %d, header STATE at %d:\n%s", got, col, plain)
			}
			if f := strings.Fields(line); len(f) < 3 || f[2] == "-" {
				t.Errorf("a sink's RECS is %q, want its entries:\n%s", f, plain)
			}
		}
	}
	for _, line := range strings.Split(last, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "sink.log.out") && strings.Contains(line, " - ") && strings.Count(line, "-") > 2 {
			t.Errorf("no rates on a later frame: %q", line)
		}
	}
}

// TestTopPlainWhenNotATerminal: piped, top prints plain frames.
func TestTopPlainWhenNotATerminal(t *testing.T) {
	addr, _, _ := startFilesPipeline(t)
	var out bytes.Buffer
	if err := inspect.Top(context.Background(), &out, inspect.TopOptions{Against: addr, Interval: 100 * time.Millisecond, Count: 2}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if strings.Contains(s, "\x1b") || strings.Count(s, "pipeline top") != 2 || !strings.Contains(s, "sink.log.out") {
		t.Errorf("plain output:\n%s", s)
	}
	if err := inspect.Top(context.Background(), io.Discard, inspect.TopOptions{Against: "127.0.0.1:1", Interval: time.Second, Count: 1}); err == nil ||
		!strings.Contains(err.Error(), "is `pipeline run` serving") {
		t.Errorf("top against nothing: %v", err)
	}
}
