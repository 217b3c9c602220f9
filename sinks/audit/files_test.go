package audit

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// within runs f and fails the test when it has not returned in 20 s (a
// FIFO blocked the trail forever before it was refused).
func within(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not return in 20 s", what)
		return nil
	}
}

// A trail's files must be regular files: a trail path or a rotated file
// that is a FIFO or a symlink to /dev/zero is refused by run and by verify,
// naming the path, instead of blocking forever or reading without end.
func TestTrailFilesMustBeRegular(t *testing.T) {
	plant := map[string]func(t *testing.T, path string){
		"a FIFO": func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"a character device": func(t *testing.T, path string) {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		},
	}
	for what, make := range plant {
		for _, name := range []string{"trail.jsonl", "trail.jsonl.1"} {
			t.Run(what+" at "+name, func(t *testing.T) {
				dir := t.TempDir()
				if name != "trail.jsonl" {
					writeTrail(t, build(t, dir, ""), 3)
				}
				path := filepath.Join(dir, name)
				make(t, path)
				s := build(t, dir, "")
				env, _ := nodetest.Env(t, prometheus.NewRegistry())
				var logs nodetest.LogBuffer
				env.Logger = slog.New(slog.NewTextHandler(&logs, nil))
				err := within(t, "open", func() error {
					tg, err := s.Open(context.Background(), env, node.ModeRun)
					if err != nil {
						return err
					}
					tg.Update(context.Background(), []node.Entry{rec(1)})
					tg.Close()
					return errors.New(logs.String())
				})
				if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), what) {
					t.Errorf("run: %v, want an error naming %s as %s", err, path, what)
				}
				err = within(t, "verify", func() error {
					files, err := TrailFiles([]string{filepath.Join(dir, "trail.jsonl")})
					if err != nil {
						return err
					}
					_, err = Verify(files, "")
					return err
				})
				if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), what) {
					t.Errorf("verify: %v, want an error naming %s as %s", err, path, what)
				}
			})
		}
	}
}

// A line longer than the bound ends verify with an error instead of
// growing a buffer without end.
func TestVerifyBoundsLines(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "trail.jsonl.1")
	if err := os.WriteFile(path, []byte(strings.Repeat("x", maxLineBytes+10)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Verify([]string{path}, "")
	if err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("verify: %v", err)
	}
	if _, err := readFirstLine(path); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("first line: %v", err)
	}
	if _, _, err := readLastLine(path); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("last line: %v", err)
	}
}
