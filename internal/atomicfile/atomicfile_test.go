package atomicfile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := Write(path, []byte("one"), Options{Mode: 0o640, UID: -1, GID: -1}); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("two"), Options{Mode: 0o600, UID: -1, GID: -1}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "two" {
		t.Fatalf("read %q, %v", b, err)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	noTemp(t, filepath.Dir(path))
}

// A rename that fails (the destination is a directory) leaves no
// temporary file behind.
func TestRenameFailureRemovesTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.MkdirAll(filepath.Join(path, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("data"), Options{Mode: 0o644, UID: -1, GID: -1}); err == nil {
		t.Fatal("rename over a directory succeeded")
	}
	noTemp(t, dir)
}

// A write that fails on a full disk leaves no temporary file behind, on
// every attempt.
func TestFullDiskRemovesTemp(t *testing.T) {
	dir := t.TempDir()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI runs as root: mounting a small tmpfs needs it")
		}
		t.Skip("mounting a small tmpfs needs root")
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		t.Fatalf("mount a tmpfs as root: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, 0) })
	big := bytes.Repeat([]byte("x"), 1<<20)
	for range 3 {
		err := Write(filepath.Join(dir, "f"), big, Options{Mode: 0o644, UID: -1, GID: -1})
		if err == nil || !strings.Contains(err.Error(), "no space") {
			t.Fatalf("write of 1 MiB on a 64 KiB disk: %v", err)
		}
	}
	noTemp(t, dir)
}

func noTemp(t *testing.T, dir string) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, ".*.tmp"))
	if err != nil || len(names) > 0 {
		t.Errorf("temporary files left: %v %v", names, err)
	}
}
