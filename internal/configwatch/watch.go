package configwatch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is how long the directories must be quiet after an event
// before a change is reported: an editor's save or a ConfigMap update is a
// burst of events within a few milliseconds.
const DefaultDebounce = 150 * time.Millisecond

// DefaultPollInterval is the polling period used when inotify is
// unavailable and no interval was given.
const DefaultPollInterval = 2 * time.Second

// Options configure Run.
type Options struct {
	// Dirs are the directories to watch: each configuration directory and
	// the directory of each configuration file.
	Dirs []string
	// Debounce is the quiet time after the last event; DefaultDebounce when 0.
	Debounce time.Duration
	// Interval, when positive, also polls Hash at this period. When inotify
	// cannot watch every directory, Run polls at Interval, or at
	// DefaultPollInterval when it is 0.
	Interval time.Duration
	// Hash returns a digest of the configuration's contents, for polling
	// and for the comparison with Baseline.
	Hash func() (string, error)
	// Baseline, when set with Hash, is the digest of the configuration the
	// caller runs. Once its watch is set, Run reports a change if Hash
	// differs from it: an edit made between loading the configuration and
	// setting the watch is not lost.
	Baseline string
	// Logger receives inotify errors and the switch to polling.
	Logger *slog.Logger
	// Relevant, when set, says whether an event's path can change the
	// configuration (see Relevant); other events are ignored, so a log
	// file written in a configuration directory triggers nothing.
	Relevant func(path string) bool
}

// Run reports possible changes by calling changed, from Run's goroutine,
// until ctx ends: once after each burst of events in a watched directory
// has been quiet for Debounce, and whenever a poll finds a new hash. A
// report is a hint; the caller compares contents. Run returns nil when ctx
// ends.
func Run(ctx context.Context, o Options, changed func()) error {
	if o.Debounce <= 0 {
		o.Debounce = DefaultDebounce
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	var events <-chan fsnotify.Event
	var errs <-chan error
	w, err := watch(o.Dirs)
	if err != nil {
		o.Logger.Warn("cannot watch the configuration with inotify; polling instead", "err", err)
		if o.Interval <= 0 {
			o.Interval = DefaultPollInterval
		}
	} else {
		defer w.Close()
		events, errs = w.Events, w.Errors
	}
	var poll <-chan time.Time
	var last string
	if o.Hash != nil && (o.Interval > 0 || o.Baseline != "") {
		last, _ = o.Hash()
		if o.Baseline != "" && last != o.Baseline {
			changed() // edited before the watch was set
		}
	}
	if o.Interval > 0 && o.Hash != nil {
		t := time.NewTicker(o.Interval)
		defer t.Stop()
		poll = t.C
	}
	quiet := time.NewTimer(time.Hour)
	quiet.Stop()
	defer quiet.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if o.Relevant != nil && !o.Relevant(ev.Name) {
				continue
			}
			quiet.Reset(o.Debounce)
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			o.Logger.Warn("configuration watch error", "err", err)
		case <-quiet.C:
			changed()
		case <-poll:
			h, err := o.Hash()
			if err != nil || h == last {
				continue
			}
			last = h
			changed()
		}
	}
}

func watch(dirs []string) (*fsnotify.Watcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	for _, d := range dirs {
		if err := w.Add(d); err != nil {
			w.Close()
			return nil, fmt.Errorf("watch %s: %w", d, err)
		}
	}
	return w, nil
}

// Dirs returns the directories to watch for the given configuration
// paths: a directory itself, a file's directory; each once, sorted.
func Dirs(paths []string) []string {
	var out []string
	for _, p := range paths {
		d := p
		if st, err := os.Stat(p); err != nil || !st.IsDir() {
			d = filepath.Dir(p)
		}
		out = append(out, filepath.Clean(d))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Relevant returns the filter of events for the given configuration
// paths: a configuration file itself; a *.hcl file (not *.test.hcl) in a
// configuration directory; a watched directory itself; and names starting
// with ".." in either, which is how Kubernetes swaps a mounted ConfigMap
// (the "..data" symlink and its timestamped directories). An editor's
// temporary and backup files, and any other file (a log written next to
// the configuration), are ignored.
func Relevant(paths []string) func(string) bool {
	files := map[string]bool{}
	dirs := map[string]bool{}
	for _, p := range paths {
		p = filepath.Clean(p)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			dirs[p] = true
			continue
		}
		files[p] = true
		if _, ok := dirs[filepath.Dir(p)]; !ok {
			dirs[filepath.Dir(p)] = false // watched for the file only
		}
	}
	return func(name string) bool {
		name = filepath.Clean(name)
		if _, watched := dirs[name]; watched || files[name] {
			return true // a configuration file or a watched directory itself
		}
		dir, base := filepath.Dir(name), filepath.Base(name)
		all, watched := dirs[dir]
		switch {
		case !watched:
			return false
		case strings.HasPrefix(base, ".."):
			return true
		case all:
			return strings.HasSuffix(base, ".hcl") && !strings.HasSuffix(base, ".test.hcl")
		}
		return false
	}
}

// Hash digests the names and contents of files (symlinks followed, as
// the loader reads them), in the order given.
func Hash(files []string) (string, error) {
	h := sha256.New()
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return "", fmt.Errorf("hash configuration: %w", err)
		}
		fmt.Fprintf(h, "%s\x00", name)
		n, err := io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("hash configuration %s: %w", name, err)
		}
		fmt.Fprintf(h, "\x00%d\x00", n)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
