package files

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/kobject"
)

// debounce is how long the files must be quiet after a change before they
// are re-read: editors and kubelet write in several steps.
const debounce = 100 * time.Millisecond

// run is one Run of the source.
type run struct {
	src    *Source
	env    node.Env
	out    node.Output
	m      *kobject.Metrics
	fw     *fsnotify.Watcher // nil in tests that feed events directly
	hash   [32]byte
	loaded bool
}

// Run implements node.Source. It reads the files, publishes their objects
// and marks itself synced, then re-reads them after every change of their
// directories (and every poll_interval) and publishes the difference.
func (s *Source) Run(ctx context.Context, env node.Env, out node.Output) error {
	m, err := kobject.NewMetrics(env.Metrics)
	if err != nil {
		return fmt.Errorf("%s: %w", s.address, err)
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("%s: watch files: %w", s.address, err)
	}
	r := &run{src: s, env: env, out: out, m: m, fw: fw}
	events := make(chan struct{}, 1)
	var wg sync.WaitGroup
	wg.Go(func() { r.forward(events) })
	defer wg.Wait()
	defer fw.Close()
	return r.loop(ctx, events)
}

// forward turns fsnotify events (any name, any operation: a ConfigMap
// update only renames ..data) into a coalesced signal.
func (r *run) forward(events chan<- struct{}) {
	for {
		select {
		case _, ok := <-r.fw.Events:
			if !ok {
				return
			}
			select {
			case events <- struct{}{}:
			default:
			}
		case err, ok := <-r.fw.Errors:
			if !ok {
				return
			}
			r.env.Logger.Warn("file watch error", "err", err)
		}
	}
}

func (r *run) loop(ctx context.Context, events <-chan struct{}) error {
	r.reload()
	var poll <-chan time.Time
	if r.src.poll > 0 {
		t := time.NewTicker(r.src.poll)
		defer t.Stop()
		poll = t.C
	}
	timer := time.NewTimer(debounce)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-events:
			timer.Reset(debounce)
		case <-timer.C:
			r.reload()
		case <-poll:
			r.reload()
		}
	}
}

// reload re-reads the files and, when their content changed, publishes
// the whole new state (Output.Replace publishes only the difference).
func (r *run) reload() {
	snap := r.src.read()
	r.watch(snap.dirs)
	r.health(snap.readErr)
	if r.loaded && snap.hash == r.hash {
		return
	}
	if len(snap.files) == 0 && len(snap.readErr) == 0 {
		r.env.Logger.Warn("no file matches paths", "patterns", len(r.src.patterns))
	}
	records, objects, skips := r.src.records(snap.files)
	for _, sk := range skips {
		r.m.Skipped.WithLabelValues(sk.reason).Inc()
		r.env.Logger.Warn("object skipped", "file", sk.where, "reason", sk.reason, "err", sk.err)
	}
	r.out.Replace(records)
	r.m.Objects.Set(float64(objects))
	r.m.LastSync.SetToCurrentTime()
	if !r.loaded {
		r.out.MarkSynced()
		r.env.Logger.Info("files loaded", "records", len(records), "files", len(snap.files))
	} else {
		r.env.Logger.Info("files changed", "records", len(records), "files", len(snap.files))
	}
	r.hash, r.loaded = snap.hash, true
}

// watch adds the directories not watched yet. A deleted directory loses
// its watch, so the set is read back from the watcher every time.
func (r *run) watch(dirs []string) {
	if r.fw == nil {
		return
	}
	watched := map[string]bool{}
	for _, d := range r.fw.WatchList() {
		watched[d] = true
	}
	for _, d := range dirs {
		if watched[d] {
			continue
		}
		if err := r.fw.Add(d); err != nil {
			r.env.Logger.Warn("cannot watch directory; relying on poll_interval", "file", d, "err", err)
		}
	}
}

func (r *run) health(readErr []error) {
	if len(readErr) > 0 {
		r.env.Health.Set(node.Degraded, fmt.Sprintf("%d file(s) unreadable: %v", len(readErr), errors.Join(readErr...)))
		return
	}
	r.env.Health.Set(node.Healthy, "")
}

var _ node.Source = (*Source)(nil)
