package kubernetes

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"

	"github.com/pipeline/pipeline/engine/node"
)

// clients is what a watch needs from the API server. Run builds it from a
// rest.Config; unit tests pass fakes.
type clients struct {
	dynamic  dynamic.Interface
	metadata metadata.Interface // used with metadata_only
	// rest lists and watches with the single-pass decoder; nil uses the
	// dynamic client (fakes in unit tests).
	rest rest.Interface
	// readyz runs the active health check; nil disables it.
	readyz func(ctx context.Context) error
}

func newClients(c connection) (clients, error) {
	dyn, err := dynamic.NewForConfigAndClient(c.cfg, c.hc)
	if err != nil {
		return clients{}, fmt.Errorf("dynamic client: %w", err)
	}
	md, err := metadata.NewForConfigAndClient(c.cfg, c.hc)
	if err != nil {
		return clients{}, fmt.Errorf("metadata client: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(c.cfg, c.hc)
	if err != nil {
		return clients{}, fmt.Errorf("health check client: %w", err)
	}
	readyz := func(ctx context.Context) error {
		return dc.RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
	}
	rc, err := newRESTClient(c)
	if err != nil {
		return clients{}, fmt.Errorf("rest client: %w", err)
	}
	return clients{dynamic: dyn, metadata: md, rest: rc, readyz: readyz}, nil
}

// newInformer builds the informer for the resolved target: a dynamic
// informer (any resource, whole objects) or, with metadata_only, a metadata
// informer. Label and field selectors (and name) are applied by the server.
func (w *watcher) newInformer(cl clients) cache.SharedIndexInformer {
	tweak := w.tweak
	if w.src.opts.metadataOnly {
		obs := observedMetadata{Interface: cl.metadata, obs: w.observe}
		return metadatainformer.NewFilteredMetadataInformer(obs, w.res.gvr, w.res.namespace, 0, cache.Indexers{}, tweak).Informer()
	}
	obs := observedDynamic{Interface: cl.dynamic, rest: cl.rest, obs: w.observe, proj: w.src.proj}
	if w.src.proj != nil {
		obs.pb = layoutFor(w.res.gvk)
	}
	return dynamicinformer.NewFilteredDynamicInformer(obs, w.res.gvr, w.res.namespace, 0, cache.Indexers{}, tweak).Informer()
}

// tweak applies the source's selectors to a list or watch request.
func (w *watcher) tweak(o *metav1.ListOptions) {
	o.LabelSelector = w.src.target.labelSelector
	o.FieldSelector = w.fieldSelector()
}

// recordsDecoded reports whether the source runs the record informer
// (newRecordInformer) rather than client-go's shared informer.
func (w *watcher) recordsDecoded(cl clients) bool {
	return w.src.proj != nil && cl.rest != nil && !w.src.opts.cached && !w.src.opts.metadataOnly
}

// newRecordInformer builds the informer of a projecting source: its list
// and watch decode each object straight into the record object the cache
// keeps (record.go), as the bytes arrive, so the cache never sees an
// intermediate unstructured object and the conversion overlaps the
// transfer instead of following it. It is client-go's controller with a
// queue of its own, which calls the watcher from the goroutine popping
// the queue (process); the shared informer hands every notification
// through two more goroutines (its listener's pop and run), which cost
// about 60 us per change here. The queue marks the informer synced only
// once the last object of the initial list has been processed.
func (w *watcher) newRecordInformer(rc rest.Interface, logger *logr.Logger) (cache.Store, cache.Controller) {
	l := lister{rc: rc, gvr: w.res.gvr, ns: w.res.namespace, proj: w.src.proj, pb: layoutFor(w.res.gvk), record: w.record}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			w.tweak(&o)
			list, err := l.listRecords(ctx, o)
			w.observe(ctx, err)
			if err != nil {
				return nil, err
			}
			return list, nil
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w.tweak(&o)
			wi, err := l.Watch(ctx, o)
			w.observe(ctx, err)
			return wi, err
		},
	}
	store := cache.NewStore(objectKey)
	queue := cache.NewRealFIFOWithOptions(cache.RealFIFOOptions{Logger: logger, Name: "records " + w.src.address,
		KeyFunction: objectKey, KnownObjects: store, Transformer: w.transform})
	ctrl := cache.New(&cache.Config{Queue: queue, ListerWatcher: listWatchNoStream{lw}, ObjectType: &recordObject{},
		ObjectDescription: w.res.gvr.String(), Process: w.process(store), WatchErrorHandlerWithContext: w.watchError})
	return store, ctrl
}

// process applies each change popped from the record informer's queue to
// its cache and hands it to the watcher, as client-go's informers do. The
// queue sends no atomic replace or resync items (their options are off),
// so every item is a list of an object's deltas.
func (w *watcher) process(store cache.Store) cache.ProcessFunc {
	return func(obj any, isInInitialList bool) error {
		deltas, ok := obj.(cache.Deltas)
		if !ok {
			return fmt.Errorf("%s: informer queue item of type %T", w.src.address, obj)
		}
		for _, d := range deltas {
			switch d.Type {
			case cache.Sync, cache.Replaced, cache.Added, cache.Updated:
				if old, exists, err := store.Get(d.Object); err == nil && exists {
					if err := store.Update(d.Object); err != nil {
						return err
					}
					w.OnUpdate(old, d.Object)
				} else {
					if err := store.Add(d.Object); err != nil {
						return err
					}
					w.OnAdd(d.Object, isInInitialList)
				}
			case cache.Deleted:
				if err := store.Delete(d.Object); err != nil {
					return err
				}
				w.OnDelete(d.Object)
			}
		}
		return nil
	}
}

// objectKey is the record informer's key function: a record object's id,
// which it made once (record.go); anything else as client-go keys it.
func objectKey(obj any) (string, error) {
	if o, ok := obj.(*recordObject); ok {
		return o.objID, nil
	}
	return cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
}

// record turns a decoded (projected) object into what the cache keeps.
func (w *watcher) record(u *unstructured.Unstructured) *recordObject {
	w.src.pruner.Prune(u.Object)
	return newRecordObject(u, w.src.address, w.src.keyer, w.src.shape, &w.names)
}

// listWatchNoStream starts the informer with a LIST rather than a
// watch-list stream (see observedDynamic.IsWatchListSemanticsUnSupported).
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

type observeFunc func(ctx context.Context, err error)

// observedDynamic wraps a dynamic client so that List and Watch calls
// report their outcome and, given a REST client, decode in a single pass
// (decoder.go). It keeps the wrapped client's watch-list support.
type observedDynamic struct {
	dynamic.Interface
	rest rest.Interface
	obs  observeFunc
	proj *node.Paths  // nil: whole objects
	pb   *protoLayout // non-nil: list and watch as protobuf (protobuf.go)
}

func (c observedDynamic) Resource(gvr kschema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return observedNamespaceable{NamespaceableResourceInterface: c.Interface.Resource(gvr), gvr: gvr, rest: c.rest, obs: c.obs, proj: c.proj, pb: c.pb}
}

// IsWatchListSemanticsUnSupported makes the informer start with a LIST
// (resourceVersion 0, served from the API server's watch cache) instead of
// a watch-list stream when the single-pass decoder is in use: on our
// benchmark (10,000 pods) the LIST is about twice as fast, because the
// server encodes one response instead of 10,000 events. Watch-list only
// saves the API server memory on very large lists.
func (c observedDynamic) IsWatchListSemanticsUnSupported() bool {
	return c.rest != nil || watchlist.DoesClientNotSupportWatchListSemantics(c.Interface)
}

type observedNamespaceable struct {
	dynamic.NamespaceableResourceInterface
	gvr  kschema.GroupVersionResource
	rest rest.Interface
	obs  observeFunc
	proj *node.Paths
	pb   *protoLayout
}

func (r observedNamespaceable) Namespace(ns string) dynamic.ResourceInterface {
	o := observedResource{ResourceInterface: r.NamespaceableResourceInterface.Namespace(ns), obs: r.obs}
	if r.rest != nil {
		o.fast = &lister{rc: r.rest, gvr: r.gvr, ns: ns, proj: r.proj, pb: r.pb}
	}
	return o
}

type observedResource struct {
	dynamic.ResourceInterface
	fast *lister // nil: the dynamic client lists and watches
	obs  observeFunc
}

func (r observedResource) List(ctx context.Context, o metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	var l *unstructured.UnstructuredList
	var err error
	if r.fast != nil {
		l, err = r.fast.List(ctx, o)
	} else {
		l, err = r.ResourceInterface.List(ctx, o)
	}
	r.obs(ctx, err)
	return l, err
}

func (r observedResource) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	var wi watch.Interface
	var err error
	if r.fast != nil {
		wi, err = r.fast.Watch(ctx, o)
	} else {
		wi, err = r.ResourceInterface.Watch(ctx, o)
	}
	r.obs(ctx, err)
	return wi, err
}

// observedMetadata is observedDynamic for the metadata client.
type observedMetadata struct {
	metadata.Interface
	obs observeFunc
}

func (c observedMetadata) Resource(gvr kschema.GroupVersionResource) metadata.Getter {
	return observedGetter{Getter: c.Interface.Resource(gvr), obs: c.obs}
}

func (c observedMetadata) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(c.Interface)
}

type observedGetter struct {
	metadata.Getter
	obs observeFunc
}

func (g observedGetter) Namespace(ns string) metadata.ResourceInterface {
	return observedMetadataResource{ResourceInterface: g.Getter.Namespace(ns), obs: g.obs}
}

type observedMetadataResource struct {
	metadata.ResourceInterface
	obs observeFunc
}

func (r observedMetadataResource) List(ctx context.Context, o metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	l, err := r.ResourceInterface.List(ctx, o)
	r.obs(ctx, err)
	return l, err
}

func (r observedMetadataResource) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	wi, err := r.ResourceInterface.Watch(ctx, o)
	r.obs(ctx, err)
	return wi, err
}

// transform runs before an object enters the informer cache: metadata is
// turned into an unstructured object, ignore_fields are removed (so the
// memory is really released), and with store = "cached" only a slim
// object is kept.
func (w *watcher) transform(obj any) (any, error) {
	var u *unstructured.Unstructured
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		u = o
	case *metav1.PartialObjectMetadata:
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, fmt.Errorf("convert metadata of %s/%s: %w", o.Namespace, o.Name, err)
		}
		u = &unstructured.Unstructured{Object: m}
		u.SetGroupVersionKind(w.res.gvk)
	default:
		return obj, nil // tombstones and objects already transformed
	}
	if w.src.opts.cached {
		w.src.pruner.Prune(u.Object)
		return newSlim(u, w.src.keyer, !w.cachedUnchanged(u)), nil
	}
	if w.src.proj != nil {
		return w.record(u), nil
	}
	w.src.pruner.Prune(u.Object)
	return u, nil
}

// cachedUnchanged reports whether the cache already holds u at the same
// resourceVersion (a relist of an unchanged object).
func (w *watcher) cachedUnchanged(u *unstructured.Unstructured) bool {
	if w.store == nil {
		return false
	}
	old, ok, _ := w.store.GetByKey(id(u.GetNamespace(), u.GetName()))
	if !ok {
		return false
	}
	o, isSlim := old.(*slimObject)
	return isSlim && o.ResourceVersion == u.GetResourceVersion()
}

var (
	_ dynamic.Interface          = observedDynamic{}
	_ dynamic.ResourceInterface  = observedResource{}
	_ metadata.Interface         = observedMetadata{}
	_ metadata.ResourceInterface = observedMetadataResource{}
)
