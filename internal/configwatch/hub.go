package configwatch

import (
	"fmt"
	"path/filepath"
	"sync"

	"github.com/fsnotify/fsnotify"
)

// Hub shares one inotify instance (one fsnotify.Watcher) among every
// watcher in a process. Linux allows 128 inotify instances per user by
// default, so a watcher per source failed at about 125 sources in one
// configuration; watches within one instance are plentiful. The watcher is
// made when the first directory is watched and closed when the last
// subscription closes, so a process that watches nothing (plan, validate)
// holds none.
type Hub struct {
	mu   sync.Mutex
	w    *fsnotify.Watcher
	refs map[string]int               // how many subscriptions watch each directory
	subs map[string]map[*Sub]struct{} // the subscriptions of each directory
	all  map[*Sub]struct{}
}

// shared is the process's hub: one inotify instance per process.
var shared Hub

// Shared returns the process's hub.
func Shared() *Hub { return &shared }

// Sub is one subscription to a hub: C receives a signal (coalesced, never
// blocking the hub) after any event in one of its directories, and after
// a watch error such as a queue overflow, which may have lost an event of
// any directory.
type Sub struct {
	C    <-chan struct{}
	c    chan struct{}
	hub  *Hub
	dirs map[string]bool
}

// Subscribe returns a subscription that watches no directory yet.
func (h *Hub) Subscribe() *Sub {
	c := make(chan struct{}, 1)
	s := &Sub{C: c, c: c, hub: h, dirs: map[string]bool{}}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.all == nil {
		h.all, h.refs, h.subs = map[*Sub]struct{}{}, map[string]int{}, map[string]map[*Sub]struct{}{}
	}
	h.all[s] = struct{}{}
	return s
}

// Watch sets the directories s watches to dirs: new ones are added, the
// others dropped. Every directory is added to the watcher again, because
// the kernel drops the watch of a directory that is deleted. The error
// names the directories that cannot be watched (or the watcher that
// cannot be made); the others are watched.
func (s *Sub) Watch(dirs []string) error {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, open := h.all[s]; !open {
		return nil
	}
	want := make(map[string]bool, len(dirs))
	for _, d := range dirs {
		want[filepath.Clean(d)] = true
	}
	for d := range s.dirs {
		if !want[d] {
			h.dropLocked(s, d)
		}
	}
	if len(want) > 0 && h.w == nil {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			return fmt.Errorf("inotify: %w", err)
		}
		h.w = w
		go h.forward(w)
	}
	var firstErr error
	for d := range want {
		if err := h.w.Add(d); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("watch %s: %w", d, err)
		}
		if s.dirs[d] {
			continue
		}
		s.dirs[d] = true
		h.refs[d]++
		if h.subs[d] == nil {
			h.subs[d] = map[*Sub]struct{}{}
		}
		h.subs[d][s] = struct{}{}
	}
	return firstErr
}

// Close ends the subscription; the last one closes the watcher.
func (s *Sub) Close() {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, open := h.all[s]; !open {
		return
	}
	for d := range s.dirs {
		h.dropLocked(s, d)
	}
	delete(h.all, s)
	if len(h.all) == 0 && h.w != nil {
		_ = h.w.Close() // ends forward
		h.w = nil
	}
}

func (h *Hub) dropLocked(s *Sub, d string) {
	delete(s.dirs, d)
	delete(h.subs[d], s)
	if h.refs[d]--; h.refs[d] > 0 {
		return
	}
	delete(h.refs, d)
	delete(h.subs, d)
	if h.w != nil {
		_ = h.w.Remove(d) // gone already when the directory was deleted
	}
}

// forward fans the events of w out to the subscriptions of the event's
// directory (and of the path itself, a watched directory that changed),
// until w is closed.
func (h *Hub) forward(w *fsnotify.Watcher) {
	for {
		select {
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			name := filepath.Clean(ev.Name)
			h.mu.Lock()
			for s := range h.subs[filepath.Dir(name)] {
				s.signal()
			}
			for s := range h.subs[name] {
				s.signal()
			}
			h.mu.Unlock()
		case _, ok := <-w.Errors:
			if !ok {
				return
			}
			h.mu.Lock()
			for s := range h.all {
				s.signal()
			}
			h.mu.Unlock()
		}
	}
}

func (s *Sub) signal() {
	select {
	case s.c <- struct{}{}:
	default:
	}
}
