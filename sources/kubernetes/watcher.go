package kubernetes

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zclconf/go-cty/cty"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/kobject"
)

// watcher is one Run's watch. It receives the informer's events (in one
// goroutine, in order), keeps the index of record keys and emits records.
// Records are not kept here: values are computed from the objects the
// events carry, and the informer's cache holds the objects.
type watcher struct {
	src   *Source
	log   *slog.Logger
	out   node.Output
	m     *metrics
	mon   *monitor
	ctx   context.Context // the run's context, for fetches made by handlers
	res   resolved
	store cache.Store  // the informer's cache
	cache *objectCache // store = "cached" only

	mu      sync.Mutex
	index   index
	synced  bool
	initial map[string]node.Record // records gathered until the initial sync
	skipped map[string]string      // object id -> reason, so each is logged once
	missing int                    // objects skipped for a missing index path
	names   interner               // strings and types shared by the cached objects (object.go)

	// lists and streams count the LISTs and the watch-list streams asked
	// for: how the initial state was read (initial_sync).
	lists, streams atomic.Int32
}

// index maps objects to record keys: kobject.Index (keyIndex), or
// idIndex when every key is namespace/name. Put and Remove are given the
// object's version the cache held before the event (nil: none).
type index interface {
	Put(id, key string, prev *object) []kobject.Change
	Remove(id string, prev *object) []kobject.Change
	Winner(key string) (string, bool)
	Len() int
}

type keyIndex struct{ *kobject.Index }

func (ix keyIndex) Put(id, key string, _ *object) []kobject.Change { return ix.Index.Put(id, key) }
func (ix keyIndex) Remove(id string, _ *object) []kobject.Change   { return ix.Index.Remove(id) }

// idIndex is the index of objects whose key is their id: no two objects
// claim one key, and the informer's cache holds every object by its id
// already, so it counts them instead of keeping a set of ids of its own.
type idIndex struct {
	w *watcher
	n int
}

func (ix *idIndex) Put(id, _ string, prev *object) []kobject.Change {
	if !prev.keyed() {
		ix.n++
	}
	return []kobject.Change{{Key: id, Winner: id, WinnerChanged: !prev.keyed()}}
}

func (ix *idIndex) Remove(id string, prev *object) []kobject.Change {
	if !prev.keyed() {
		return nil
	}
	ix.n--
	return []kobject.Change{{Key: id, WinnerChanged: true}}
}

func (ix *idIndex) Winner(key string) (string, bool) { return key, ix.w.cached(key).keyed() }

func (ix *idIndex) Len() int { return ix.n }

// remove handles a delete (informer.go's process) of the cached object
// prev. A label change that moves an object out of the selector arrives
// here too.
func (w *watcher) remove(obj any, prev *object) {
	w.m.events.WithLabelValues("delete").Inc()
	objID, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		w.log.Warn("delete event without a name", "err", err)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cache != nil {
		w.cache.invalidate(objID)
	}
	w.unskip(objID)
	w.emit(w.deltas(w.index.Remove(objID, prev), "", nil))
	w.m.Objects.Set(float64(w.index.Len() + w.missing))
}

// upsert handles an add (prev nil) or an update of the cached object
// prev (informer.go's process).
func (w *watcher) upsert(obj any, prev *object) {
	if prev == nil {
		w.m.events.WithLabelValues("add").Inc()
	} else {
		w.m.events.WithLabelValues("update").Inc()
	}
	it, ok := obj.(*object)
	if !ok {
		w.log.Warn("unexpected object type from informer", "type", fmt.Sprintf("%T", obj))
		return
	}
	defer it.release()
	objID := it.objID
	key, keyErr := it.key()
	w.mu.Lock()
	defer w.mu.Unlock()
	defer func() { w.m.Objects.Set(float64(w.index.Len() + w.missing)) }()
	if w.cache != nil {
		w.cache.invalidate(objID)
	}
	if keyErr != nil {
		w.emit(w.deltas(w.index.Remove(objID, prev), "", nil))
		w.skip(objID, kobject.ReasonIndexMissing, keyErr)
		return
	}
	w.unskip(objID)
	var changes []kobject.Change
	for _, ch := range w.index.Put(objID, key, prev) {
		if ch.Winner == objID && !ch.WinnerChanged && prev != nil && it.sameAs(prev) {
			continue // nothing changed but resourceVersion or ignored fields
		}
		changes = append(changes, ch)
	}
	w.emit(w.deltas(changes, objID, it))
	if winner, _ := w.index.Winner(key); winner != objID {
		w.skip(objID, kobject.ReasonDuplicateKey, fmt.Errorf("key %q is provided by %s", key, winner))
	}
}

// deltas turns index changes into deltas. self and it are the object of
// the event being handled (nil for a delete).
func (w *watcher) deltas(changes []kobject.Change, self string, it *object) []node.Delta {
	now := time.Now()
	var out []node.Delta
	for _, ch := range changes {
		if ch.Winner == "" {
			out = append(out, node.Remove(ch.Key, now))
			continue
		}
		var v cty.Value
		var err error
		var org *node.Origin
		if ch.Winner == self && it != nil {
			v, err = it.value()
			org = it.origin(w.src.address)
		} else {
			w.unskip(ch.Winner) // a duplicate that now provides the key
			v, err = w.valueOf(ch.Winner)
			org = w.originOf(ch.Winner)
		}
		if err != nil {
			w.log.Warn("cannot emit object; its key is removed until it changes", "key", ch.Key, "err", err)
			w.m.Skipped.WithLabelValues(kobject.ReasonUnconvertible).Inc()
			out = append(out, node.Remove(ch.Key, now))
			continue
		}
		if org.Object != ch.Key { // the source's key: namespace/name or index_by's
			c := *org // origins may be shared with the cache: never written
			c.Object = ch.Key
			org = &c
		}
		d := node.Upsert(ch.Key, v, now)
		d.Origin = org
		out = append(out, d)
	}
	return out
}

// valueOf returns the value of another object than the event's: the next
// object providing a key whose winner went away.
func (w *watcher) valueOf(objID string) (cty.Value, error) {
	if w.cache != nil {
		ctx, cancel := context.WithTimeout(w.ctx, checkTimeout)
		defer cancel()
		u, err := w.cache.get(ctx, objID)
		if err != nil {
			return cty.NilVal, err
		}
		return kobject.Value(u.Object)
	}
	it := w.cached(objID)
	if it == nil {
		return cty.NilVal, fmt.Errorf("object %s not in the cache", objID)
	}
	return it.value()
}

// cached returns the object with id objID from the informer's cache,
// which holds only objects (transform makes them), or nil.
func (w *watcher) cached(objID string) *object {
	if w.store == nil {
		return nil
	}
	obj, _, _ := w.store.GetByKey(objID) // a cache.Store's never fails
	o, _ := obj.(*object)
	return o
}

// emit publishes deltas, or gathers them until the initial sync completes
// (unless call_on_change_during_sync is set, which publishes them too).
func (w *watcher) emit(deltas []node.Delta) {
	if len(deltas) == 0 {
		return
	}
	if !w.synced {
		for _, d := range deltas {
			if d.Delete {
				delete(w.initial, d.Key)
			} else {
				w.initial[d.Key] = node.Record{Key: d.Key, Value: d.Value, Origin: d.Origin}
			}
		}
		if !w.src.opts.syncChanges {
			return
		}
	}
	w.out.Apply(deltas)
}

// markSynced publishes the complete initial state as one Replace (which
// also removes what a previous run emitted and is gone now), then marks
// the output synced.
func (w *watcher) markSynced() {
	w.mu.Lock()
	defer w.mu.Unlock()
	records := make([]node.Record, 0, len(w.initial))
	for _, r := range w.initial {
		records = append(records, r)
	}
	slices.SortFunc(records, func(a, b node.Record) int { return strings.Compare(a.Key, b.Key) })
	w.out.Replace(records)
	w.out.MarkSynced()
	w.synced, w.initial = true, nil
	w.mon.setSynced()
	via := "watch_list"
	if w.lists.Load() > 0 {
		via = "list"
	}
	w.log.Info("initial sync complete", "records", len(records), "op", via)
}

func (w *watcher) skip(objID, reason string, err error) {
	if w.skipped[objID] == reason {
		return
	}
	w.unskip(objID)
	w.skipped[objID] = reason
	if reason == kobject.ReasonIndexMissing {
		w.missing++
	}
	w.m.Skipped.WithLabelValues(reason).Inc()
	w.log.Warn("object skipped", "key", objID, "reason", reason, "err", err)
}

func (w *watcher) unskip(objID string) {
	if r, ok := w.skipped[objID]; ok {
		if r == kobject.ReasonIndexMissing {
			w.missing--
		}
		delete(w.skipped, objID)
	}
}

// lookup returns a copy of the object providing key.
func (w *watcher) lookup(ctx context.Context, key string) (*unstructured.Unstructured, bool, error) {
	w.mu.Lock()
	objID, ok := w.index.Winner(key)
	w.mu.Unlock()
	if !ok {
		return nil, false, nil
	}
	if w.cache != nil {
		u, err := w.cache.get(ctx, objID)
		if err != nil {
			return nil, false, fmt.Errorf("lookup %q: %w", key, err)
		}
		return u, true, nil
	}
	if o := w.cached(objID); o != nil {
		return o.unstructured(), true, nil
	}
	return nil, false, nil
}
