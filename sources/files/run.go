package files

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/configwatch"
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
	watch   *configwatch.Sub // nil in tests that call reload directly
	hash    [32]byte
	loaded  bool
	good    map[string]*goodFile // the last content of each file that parsed, with its entries
	records int                  // how many records the last reload published
	round   uint32               // the number of reloads that settled (goodFile.round)
}

// Run implements node.Source. It reads the files, publishes their objects
// and marks itself synced, then re-reads them after every change of their
// directories (and every poll_interval) and publishes the difference. The
// directories are watched through the process's one inotify instance
// (configwatch.Shared).
func (s *Source) Run(ctx context.Context, env node.Env, out node.Output) error {
	m, err := kobject.NewMetrics(env.Metrics)
	if err != nil {
		return fmt.Errorf("%s: %w", s.address, err)
	}
	r := &run{src: s, env: env, out: out, m: m}
	if env.OneShot { // plan: nothing watches, and the poll alone re-reads
		return r.loop(ctx, nil)
	}
	r.watch = configwatch.Shared().Subscribe()
	defer r.watch.Close()
	return r.loop(ctx, r.watch.C)
}

func (r *run) loop(ctx context.Context, events <-chan struct{}) error {
	if err := r.reload(ctx); err != nil {
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
			_ = r.reload(ctx) // only the first read fails
		case <-poll:
			_ = r.reload(ctx)
		}
	}
}

// reload re-reads the files and, when their content changed, publishes
// the whole new state (Output.Replace publishes only the difference).
// Parsing stops when ctx ends, and nothing is published.
//
// The first read fails the Run, which the engine restarts with backoff,
// in two cases where publishing would let the sinks prune what an earlier
// run wrote, or render an empty set. A pattern that matches no file with
// allow_empty off: waiting in silence made plan wait for its whole
// timeout, so plan fails at once, naming the pattern. And a file that
// matched but cannot be read (over the size limit, permission denied): it
// is an input not read, not an empty one, so the source is not synced
// until it is read.
func (r *run) reload(ctx context.Context) error {
	snap := r.src.readDropping(r.good)
	r.watchDirs(snap.dirs)
	if r.loaded && snap.hash == r.hash {
		return nil
	}
	st, err := r.settle(ctx, snap)
	if err != nil {
		return nil // ctx ended: the Run is over
	}
	records, objects, skips := st.col.done()
	r.setHealth(st, len(records), skips)
	if len(st.empty) > 0 {
		return fmt.Errorf("%s: no file matches %s; set allow_empty = true if an empty match is expected", r.src.address, strings.Join(st.empty, ", "))
	}
	if !r.loaded && len(st.unread) > 0 {
		for _, u := range st.unread {
			r.m.Skipped.WithLabelValues(reasonUnreadable).Inc()
			r.env.Logger.Warn("cannot read file; not synced until it is read", "err", u)
		}
		return fmt.Errorf("%s: not synced: cannot read %s", r.src.address, strings.Join(st.unread, "; "))
	}
	for _, p := range st.problems {
		r.m.Skipped.WithLabelValues(reasonKeptLastGood).Inc()
		r.env.Logger.Warn("keeping last good content", "err", p)
	}
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

// reasonUnreadable counts, in pipeline_source_skipped_objects_total, each
// file that kept the source from syncing because it could not be read.
const reasonUnreadable = "unreadable"

// reasonKeptLastGood counts, in pipeline_source_skipped_objects_total, each
// reload that kept a file's last good content instead of what it holds now.
const reasonKeptLastGood = "kept_last_good"

// watchDirs sets the directories watched to those of the last read.
func (r *run) watchDirs(dirs []string) {
	if r.watch == nil {
		return
	}
	if err := r.watch.Watch(dirs); err != nil {
		r.env.Logger.Warn("cannot watch directory; relying on poll_interval", "err", err)
	}
}

// setHealth says what the reload found. Input that matched but gave no
// record at all (every item skipped) is degraded, not healthy: it is not
// the same as nothing matched, and plan says which.
func (r *run) setHealth(st settled, records int, skips []skip) {
	switch {
	case len(st.empty) > 0:
		r.env.Health.Set(node.Down, fmt.Sprintf("no file matches %s; set allow_empty = true if an empty match is expected", strings.Join(st.empty, ", ")))
	case !r.loaded && len(st.unread) > 0:
		r.env.Health.Set(node.Degraded, "not synced: cannot read "+strings.Join(st.unread, "; "))
	case len(st.problems) > 0:
		r.env.Health.Set(node.Degraded, fmt.Sprintf("%d problem(s): %s", len(st.problems), strings.Join(st.problems, "; ")))
	case records == 0 && len(skips) > 0:
		r.env.Health.Set(node.Degraded, fmt.Sprintf("%d input(s) read, all skipped; the first: %s: %v", len(skips), skips[0].where, skips[0].err))
	default:
		r.env.Health.Set(node.Healthy, "")
	}
}

var _ node.Source = (*Source)(nil)
