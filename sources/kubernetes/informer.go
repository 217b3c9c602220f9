package kubernetes

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/sources/kubernetes/wire"
)

// newInformer builds the source's informer: client-go's controller with
// a queue of its own, which calls the watcher from the goroutine popping
// the queue (process). The shared informer hands every notification
// through two more goroutines (its listener's pop and run), a latency per
// change (docs/data-path.md §7). The queue marks the informer synced only
// once the last object of the initial list has been processed. Objects
// come through our lister (lister.go), which decodes each one straight
// into the object the cache keeps (record) as the bytes arrive, so the
// cache never sees an intermediate unstructured object and the
// conversion overlaps the transfer. Label and field selectors (and name)
// are applied by the server. The initial state comes as one LIST
// (resourceVersion "", see lister.List), or with initial_sync =
// "watch_list" as a watch-list stream; see initialSync.
func (w *watcher) newInformer(rc rest.Interface, logger *logr.Logger) (cache.Store, cache.Controller) {
	l := lister{rc: rc, gvr: w.res.gvr, ns: w.res.namespace, proj: w.src.proj, metadataOnly: w.src.opts.metadataOnly,
		record: w.record, hook: w.src.eventHook}
	if l.proj != nil && !l.metadataOnly {
		l.pb = wire.LayoutFor(w.res.gvk)
	}
	store := cache.NewStore(objectKey)
	queue := cache.NewRealFIFOWithOptions(cache.RealFIFOOptions{Logger: logger, Name: "records " + w.src.address,
		KeyFunction: objectKey, KnownObjects: store})
	ctrl := cache.New(&cache.Config{Queue: queue, ListerWatcher: w.initialSync(l), ObjectType: &object{},
		ObjectDescription: l.gvr.String(), Process: w.process(store), WatchErrorHandlerWithContext: w.watchError})
	return store, ctrl
}

// listWatch makes an informer's list and watch calls: the source's
// selectors applied, and every outcome reported to the monitor (observe).
func (w *watcher) listWatch(l lister) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			w.tweak(&o)
			w.lists.Add(1)
			obj, err := l.List(ctx, o)
			w.observe(ctx, err)
			if n := meta.LenList(obj); n > 0 { // room for the initial list's records
				w.mu.Lock()
				if !w.synced && len(w.initial) == 0 {
					w.initial = make(map[string]node.Record, n)
				}
				w.mu.Unlock()
			}
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w.tweak(&o)
			stream := o.SendInitialEvents != nil && *o.SendInitialEvents
			if stream {
				w.streams.Add(1)
			}
			wi, err := l.Watch(ctx, o)
			if stream && (apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)) {
				// A server without watch-list: the reflector lists instead.
				w.log.Debug("watch-list refused; listing", "err", err)
				return wi, err
			}
			w.observe(ctx, err)
			return wi, err
		},
	}
}

// tweak applies the source's selectors to a list or watch request.
func (w *watcher) tweak(o *metav1.ListOptions) {
	o.LabelSelector = w.src.target.labelSelector
	o.FieldSelector = w.fieldSelector()
}

// process applies each change popped from the informer's queue to
// its cache and hands it to the watcher with the object the cache held
// before, as client-go's informers do. The queue sends no atomic replace
// or resync items (their options are off), so every item is a list of an
// object's deltas (added, updated, replaced, synced or deleted).
func (w *watcher) process(store cache.Store) cache.ProcessFunc {
	return func(obj any, _ bool) error {
		deltas, ok := obj.(cache.Deltas)
		if !ok {
			return fmt.Errorf("%s: informer queue item of type %T", w.src.address, obj)
		}
		for _, d := range deltas {
			cached, _, _ := store.Get(d.Object) // nil when new
			prev, _ := cached.(*object)
			if d.Type == cache.Deleted {
				if err := store.Delete(d.Object); err != nil {
					return err
				}
				w.remove(d.Object, prev)
			} else if err := store.Add(d.Object); err != nil { // Add is Update
				return err
			} else {
				w.upsert(d.Object, prev)
			}
		}
		return nil
	}
}

// objectKey is the informer's key function: an object's id,
// which it made once (object.go); anything else as client-go keys it.
func objectKey(obj any) (string, error) {
	if o, ok := obj.(*object); ok {
		return o.objID, nil
	}
	return cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
}

// initialSync chooses how the reflector reads the initial state through
// l: one LIST (initial_sync = "list", the default and the faster where
// measured: the server encodes one response instead of an event per
// object; see docs/performance.md), or a watch-list (initial_sync =
// "watch_list"): one watch with sendInitialEvents=true and
// resourceVersionMatch=NotOlderThan, whose events the server streams from
// its watch cache, ending with a bookmark annotated
// k8s.io/initial-events-end (object.go keeps that mark); the reflector
// reads it into a store of its own and replaces the informer's with it,
// as after a LIST, then goes on watching on the same stream. A server
// that refuses the parameters (the WatchList feature off, an aggregated
// API that rejects them) fails the watch, and the reflector lists
// instead. client-go's WatchListClient feature gate
// (KUBE_FEATURE_WatchListClient=false) also turns the stream off.
func (w *watcher) initialSync(l lister) cache.ListerWatcher {
	if !w.src.opts.watchList {
		return listWatchNoStream{w.listWatch(l)}
	}
	return cache.ToListWatcherWithWatchListSemantics(w.listWatch(l), l)
}

// listWatchNoStream starts the informer with a LIST rather than a
// watch-list stream.
type listWatchNoStream struct{ *cache.ListWatch }

func (listWatchNoStream) IsWatchListSemanticsUnSupported() bool { return true }

// fieldSelector adds metadata.name=NAME for a single-resource watch.
func (w *watcher) fieldSelector() string {
	fs := w.src.target.fieldSelector
	if n := w.src.target.name; n != "" {
		if fs != "" {
			fs += ","
		}
		fs += "metadata.name=" + n
	}
	return fs
}

// observe feeds the outcome of every list and watch call to the monitor:
// client-go retries refused connections inside the reflector without
// calling the watch error handler, so the calls themselves are watched.
func (w *watcher) observe(ctx context.Context, err error) {
	switch {
	case err == nil:
		w.mon.ok()
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		// shutting down
	default:
		w.mon.fail(err)
	}
}

// record turns a decoded object into what the cache keeps (object.go),
// ignore_fields removed first, so that their memory is really released.
func (w *watcher) record(u *unstructured.Unstructured) *object {
	if w.src.opts.metadataOnly { // it came as a PartialObjectMetadata
		u.SetGroupVersionKind(w.res.gvk)
	}
	w.src.pruner.Prune(u.Object)
	switch {
	case w.src.opts.cached:
		return newSlim(u, w.src.address, w.src.keyer, &w.names, !w.cachedUnchanged(u))
	case w.src.proj != nil:
		return newRecordObject(u, w.src.address, w.src.keyer, w.src.shape, &w.names)
	}
	o := newObject(u, w.src.address, w.src.keyer, &w.names)
	o.content().whole = u
	return o
}

// cachedUnchanged reports whether the cache already holds u at the same
// resourceVersion (a relist of an unchanged object).
func (w *watcher) cachedUnchanged(u *unstructured.Unstructured) bool {
	o := w.cached(id(u.GetNamespace(), u.GetName()))
	return o != nil && o.org.ResourceVersion == u.GetResourceVersion()
}
