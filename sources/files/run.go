package files

import (
	"context"
	"fmt"
	"strings"
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
	src     *Source
	env     node.Env
	out     node.Output
	m       *kobject.Metrics
	fw      *fsnotify.Watcher // nil in tests that feed events directly
	hash    [32]byte
	loaded  bool
	good    map[string]*goodFile // the last content of each file that parsed, with its entries
	records int                  // how many records the last reload published
	round   uint32               // the number of reloads that settled (goodFile.round)
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
	if err := r.reload(); err != nil {
		return err
	}
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
			_ = r.reload() // only the first read fails
		case <-poll:
			_ = r.reload()
		}
	}
}

// reload re-reads the files and, when their content changed, publishes
// the whole new state (Output.Replace publishes only the difference).
//
// A pattern that matches no file on the first read, with allow_empty off,
// is an error of the Run: publishing an empty set would let the sinks
// prune what an earlier run wrote, and waiting in silence made plan wait
// for its whole timeout. So plan fails at once, naming the pattern, and
// run restarts the source with backoff until a file matches.
func (r *run) reload() error {
	snap := r.src.readDropping(r.good)
	r.watch(snap.dirs)
	if r.loaded && snap.hash == r.hash {
		return nil
	}
	st := r.settle(snap)
	r.setHealth(st)
	if len(st.empty) > 0 {
		return fmt.Errorf("%s: no file matches %s; set allow_empty = true if an empty match is expected", r.src.address, strings.Join(st.empty, ", "))
	}
	for _, p := range st.problems {
		r.m.Skipped.WithLabelValues(reasonKeptLastGood).Inc()
		r.env.Logger.Warn("keeping last good content", "err", p)
	}
	records, objects, skips := st.col.done()
	for _, sk := range skips {
		r.m.Skipped.WithLabelValues(sk.reason).Inc()
		r.env.Logger.Warn("object skipped", "file", sk.where, "reason", sk.reason, "err", sk.err)
	}
	r.out.Replace(records)
	r.records = len(records)
	r.m.Objects.Set(float64(objects))
	r.m.LastSync.SetToCurrentTime()
	if !r.loaded {
		r.out.MarkSynced()
		r.env.Logger.Info("files loaded", "records", len(records), "files", st.files)
	} else {
		r.env.Logger.Info("files changed", "records", len(records), "files", st.files)
	}
	r.hash, r.loaded = snap.hash, true
	return nil
}

// reasonKeptLastGood counts, in pipeline_source_objects_skipped_total, each
// reload that kept a file's last good content instead of what it holds now.
const reasonKeptLastGood = "kept_last_good"

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

func (r *run) setHealth(st settled) {
	switch {
	case len(st.empty) > 0:
		r.env.Health.Set(node.Down, fmt.Sprintf("no file matches %s; set allow_empty = true if an empty match is expected", strings.Join(st.empty, ", ")))
	case len(st.problems) > 0:
		r.env.Health.Set(node.Degraded, fmt.Sprintf("%d problem(s): %s", len(st.problems), strings.Join(st.problems, "; ")))
	default:
		r.env.Health.Set(node.Healthy, "")
	}
}

var _ node.Source = (*Source)(nil)
