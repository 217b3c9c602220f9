package regfile

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	data, fi, err := Read(small, 5)
	if err != nil || string(data) != "hello" || fi.Size() != 5 || cap(data) != 5 {
		t.Fatalf("Read = %q (cap %d), %v, %v", data, cap(data), fi, err)
	}
	if _, _, err := Read(small, 4); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the bound: %v, want ErrTooLarge", err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(small, link); err != nil {
		t.Fatal(err)
	}
	if data, _, err := Read(link, 5); err != nil || string(data) != "hello" {
		t.Errorf("through a link: %q, %v", data, err)
	}
	if _, _, err := Read(filepath.Join(dir, "missing"), 5); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}

// TestNotRegular: a FIFO without a writer, /dev/zero, a directory and a
// socket each fail at once, naming what they are.
func TestNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	zeroLink := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zeroLink); err != nil {
		t.Fatal(err)
	}
	for path, kind := range map[string]string{fifo: "a FIFO", "/dev/zero": "a character device", zeroLink: "a character device", dir: "a directory"} {
		done := make(chan error, 1)
		go func() { _, _, err := Read(path, 1<<30); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), kind) {
				t.Errorf("%s: %v, want %s and ErrNotRegular", path, err, kind)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: Read blocked", path)
		}
	}
	if _, _, err := Open(sock, os.O_RDONLY, 0); err == nil {
		t.Errorf("a socket opened")
	}
}
