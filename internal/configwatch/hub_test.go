package configwatch

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// waitSignal reports whether s is signalled within the bound: a wait for
// a kernel event, not a sleep.
func waitSignal(s *Sub, bound time.Duration) bool {
	select {
	case <-s.C:
		return true
	case <-time.After(bound):
		return false
	}
}

// One watcher serves every subscription; an event reaches the
// subscriptions of its directory only; the last Close closes the watcher.
func TestHubFansOut(t *testing.T) {
	defer goleak.VerifyNone(t)
	var h Hub
	root := t.TempDir()
	var subs []*Sub
	for _, name := range []string{"a", "b", "c"} {
		d := filepath.Join(root, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		s := h.Subscribe()
		if err := s.Watch([]string{d}); err != nil {
			t.Fatal(err)
		}
		subs = append(subs, s)
	}
	both := h.Subscribe() // a second subscription of one directory
	if err := both.Watch([]string{filepath.Join(root, "b")}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "b", "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !waitSignal(subs[1], 10*time.Second) || !waitSignal(both, 10*time.Second) {
		t.Fatal("no signal for an event in the watched directory")
	}
	if waitSignal(subs[0], 100*time.Millisecond) || waitSignal(subs[2], 0) {
		t.Error("a subscription of another directory was signalled")
	}
	both.Close() // b stays watched for subs[1]
	if err := os.WriteFile(filepath.Join(root, "b", "g"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !waitSignal(subs[1], 10*time.Second) {
		t.Fatal("no signal after another subscription of the directory closed")
	}
	for _, s := range subs {
		s.Close()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.w != nil || len(h.refs) != 0 || len(h.subs) != 0 {
		t.Errorf("after the last Close: watcher %v, refs %v, subs %v", h.w, h.refs, h.subs)
	}
}

// A directory deleted and made again is watched again by the next Watch
// (the kernel drops the watch of a deleted directory).
func TestHubDirectoryRecreated(t *testing.T) {
	defer goleak.VerifyNone(t)
	var h Hub
	d := filepath.Join(t.TempDir(), "d")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	s := h.Subscribe()
	defer s.Close()
	if err := s.Watch([]string{d}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(d); err != nil {
		t.Fatal(err)
	}
	if !waitSignal(s, 10*time.Second) {
		t.Fatal("no signal for the deleted directory")
	}
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.Watch([]string{d}); err != nil {
		t.Fatal(err)
	}
	for waitSignal(s, 100*time.Millisecond) { // drain what the deletion left
	}
	if err := os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !waitSignal(s, 10*time.Second) {
		t.Fatal("no signal in the directory made again")
	}
}
