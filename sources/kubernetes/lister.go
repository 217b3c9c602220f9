package kubernetes

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kschema "k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/sources/kubernetes/wire"
)

// lister lists and watches one resource like the dynamic client, but
// decodes each response in a single pass straight into unstructured
// objects. client-go's dynamic client parses every watch event about four
// times (framing, kind sniffing, the envelope, then the embedded object);
// for an initial sync of 10,000 pods that decoding is most of the time.
// Requests, parameters and errors are client-go's own.
type lister struct {
	rc  rest.Interface // a REST client built with dynamic.ConfigFor
	gvr kschema.GroupVersionResource
	ns  string
	// proj is what the graph reads of each object (nil: everything); the
	// rest is skipped on the wire and never allocated.
	proj *node.Paths
	// pb, for a built-in resource read through a projection, asks for
	// protobuf (wire.Layout); responses in JSON are still decoded.
	pb *wire.Layout
	// metadataOnly asks for PartialObjectMetadata (metadata_only): only
	// apiVersion, kind and metadata cross the wire.
	metadataOnly bool
	// record turns each listed or watched object into the object the
	// cache keeps (watcher.record).
	record func(*unstructured.Unstructured) *object
	hook   func(watch.EventType) // Source.eventHook
}

// What a request accepts besides JSON: protobuf first when the resource
// has it, and the metadata of objects (as client-go's metadata client asks).
const (
	acceptProtobuf     = "application/vnd.kubernetes.protobuf, application/json"
	acceptMetadata     = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json"
	acceptMetadataList = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json"
)

// newRESTClient makes the client a watch lists, watches, fetches and
// checks health with.
func newRESTClient(c connection) (rest.Interface, error) {
	cfg := dynamic.ConfigFor(c.cfg)
	cfg.AcceptContentTypes = "application/json" // others only where get asks for them
	rc, err := rest.UnversionedRESTClientForConfigAndClient(cfg, c.hc)
	if err != nil {
		return nil, fmt.Errorf("rest client: %w", err)
	}
	return rc, nil
}

func (l lister) path() []string {
	p := []string{"api"}
	if l.gvr.Group != "" {
		p = []string{"apis", l.gvr.Group}
	}
	p = append(p, l.gvr.Version)
	if l.ns != "" {
		p = append(p, "namespaces", l.ns)
	}
	return append(p, l.gvr.Resource)
}

// List lists into cached objects, converting each item as it arrives
// (record), like the dynamic client's List. The informer's first list
// asks for resourceVersion "0" (any cached version, possibly a little
// stale); asking for "" instead makes the initial state a consistent,
// current snapshot (served from the watch cache by servers with
// ConsistentListFromCache), so that what is marked synced includes every
// write made before the source started. The reflector's pager asks for
// pages of 500 along with "0", which the server ignores for "0" but honours
// for "": the limit goes too, or 10,000 pods take 20 sequential round trips.
func (l lister) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if opts.ResourceVersion == "0" && opts.ResourceVersionMatch == "" && opts.Continue == "" {
		opts.ResourceVersion = "" // a current snapshot, whole: see above
		opts.Limit = 0
	}
	body, err := l.get(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	list := &recordList{}
	head, err := wire.For(bufio.NewReaderSize(body, wire.ReadBuffer), l.pb, l.proj).List(func(obj map[string]any) error {
		list.Items = append(list.Items, l.record(&unstructured.Unstructured{Object: obj}))
		return nil
	})
	if err != nil {
		return nil, err
	}
	h := unstructured.Unstructured{Object: head}
	list.APIVersion, list.Kind = h.GetAPIVersion(), h.GetKind()
	list.ResourceVersion, list.Continue = h.GetResourceVersion(), h.GetContinue()
	list.RemainingItemCount = h.GetRemainingItemCount()
	return list, nil
}

// get sends a list or watch request and returns the response body, which
// may be JSON where protobuf was asked for (wire.For reads either).
func (l lister) get(ctx context.Context, opts metav1.ListOptions) (io.ReadCloser, error) {
	req := l.rc.Get().AbsPath(l.path()...).VersionedParams(&opts, metav1.ParameterCodec)
	switch {
	case l.metadataOnly && opts.Watch:
		req.SetHeader("Accept", acceptMetadata)
	case l.metadataOnly:
		req.SetHeader("Accept", acceptMetadataList)
	case l.pb != nil:
		req.SetHeader("Accept", acceptProtobuf)
	}
	return req.Stream(ctx)
}

// Watch watches like the dynamic client's Watch.
func (l lister) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	body, err := l.get(ctx, opts)
	if err != nil {
		return nil, err
	}
	w := &streamWatch{l: l, body: body, ch: make(chan watch.Event, watchBuffer), done: make(chan struct{})}
	go w.run()
	return w, nil
}

// watchBuffer is how many decoded events a watch holds for the reflector:
// a watch-list's initial events come in a burst, and the decoder runs
// ahead instead of waiting for the reflector at every event.
const watchBuffer = 128

// streamWatch hands a watch stream's decoded events to the reflector.
type streamWatch struct {
	l    lister // whose Watch started it
	body io.ReadCloser
	ch   chan watch.Event
	done chan struct{}
	once sync.Once
}

func (w *streamWatch) ResultChan() <-chan watch.Event { return w.ch }

func (w *streamWatch) Stop() {
	w.once.Do(func() {
		close(w.done)
		w.body.Close()
	})
}

func (w *streamWatch) run() {
	defer close(w.ch)
	defer w.body.Close()
	dec := wire.For(bufio.NewReaderSize(w.body, wire.ReadBuffer), w.l.pb, w.l.proj) // waits for the first byte
	for {
		typ, obj, err := dec.Event()
		var ev watch.Event
		switch {
		case err == nil:
			if w.l.hook != nil {
				w.l.hook(typ)
			}
			ev = w.l.event(typ, obj)
		case w.stopped() || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
			utilnet.IsProbableEOF(err) || errors.Is(err, context.Canceled):
			return
		default:
			ev = errorEvent(apierrors.NewInternalError(fmt.Errorf("decode watch event: %w", err)).Status())
		}
		select {
		case w.ch <- ev:
		case <-w.done:
			return
		}
		if ev.Type == watch.Error && err != nil {
			return
		}
	}
}

func (w *streamWatch) stopped() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// event builds a watch event: the object the cache keeps, a bookmark
// (object.go), or for an ERROR event the metav1.Status the reflector
// expects.
func (l lister) event(t watch.EventType, obj map[string]any) watch.Event {
	u := &unstructured.Unstructured{Object: obj}
	switch t {
	case watch.Error:
		var st metav1.Status
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &st); err != nil {
			st = apierrors.NewInternalError(fmt.Errorf("decode watch error: %w", err)).Status()
		}
		return errorEvent(st)
	case watch.Bookmark:
		return watch.Event{Type: t, Object: bookmark(u)}
	}
	return watch.Event{Type: t, Object: l.record(u)}
}

func errorEvent(st metav1.Status) watch.Event {
	return watch.Event{Type: watch.Error, Object: &st}
}

var _ watch.Interface = (*streamWatch)(nil)
