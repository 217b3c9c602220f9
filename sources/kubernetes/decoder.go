package kubernetes

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kschema "k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/pipeline/pipeline/engine/node"
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
	// protobuf (protobuf.go); responses in JSON are still decoded.
	pb *protoLayout
	// record, when set, turns each listed or watched object into the
	// record object the cache keeps (newRecordInformer).
	record func(*unstructured.Unstructured) *recordObject
}

// readBuffer is the buffer between a response body and its decoder: a
// few TCP segments, so that a decoder reading byte by byte rarely reaches
// the socket.
const readBuffer = 64 << 10

// Accept headers: protobuf first when the resource has it, JSON always.
const (
	acceptProtobuf = "application/vnd.kubernetes.protobuf, application/json"
)

func newRESTClient(c connection) (rest.Interface, error) {
	cfg := dynamic.ConfigFor(c.cfg)
	cfg.AcceptContentTypes = "application/json" // the decoder below reads JSON only
	return rest.UnversionedRESTClientForConfigAndClient(cfg, c.hc)
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

// List implements the dynamic client's List. The informer's first list
// asks for resourceVersion "0" (any cached version, possibly a little
// stale); asking for "" instead makes the initial state a consistent,
// current snapshot (served from the watch cache by servers with
// ConsistentListFromCache), so that what is marked synced includes every
// write made before the source started. The reflector's pager asks for
// pages of 500 along with "0", which the server ignores for "0" but honours
// for "": the limit goes too, or 10,000 pods take 20 sequential round trips.
func (l lister) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	list := &unstructured.UnstructuredList{}
	head, err := l.list(ctx, opts, func(u *unstructured.Unstructured) error {
		list.Items = append(list.Items, *u)
		return nil
	})
	if err != nil {
		return nil, err
	}
	list.Object = head
	return list, nil
}

// listRecords lists into record objects, converting each item as it
// arrives.
func (l lister) listRecords(ctx context.Context, opts metav1.ListOptions) (*recordList, error) {
	list := &recordList{}
	head, err := l.list(ctx, opts, func(u *unstructured.Unstructured) error {
		list.Items = append(list.Items, l.record(u))
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

// list lists, handing each item to each as it is decoded (as it arrives,
// for protobuf), and returns the list's own fields.
func (l lister) list(ctx context.Context, opts metav1.ListOptions, each func(*unstructured.Unstructured) error) (map[string]any, error) {
	req := l.request(opts)
	if l.pb != nil {
		return l.listProto(ctx, req, each)
	}
	raw, err := req.Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	return eachItem(raw, l.proj, each)
}

// eachItem decodes a JSON list response and hands each item to each; it
// returns the list's own fields.
func eachItem(raw []byte, proj *node.Paths, each func(*unstructured.Unstructured) error) (map[string]any, error) {
	list, err := decodeList(raw, proj)
	if err != nil {
		return nil, err
	}
	for i := range list.Items {
		if err := each(&list.Items[i]); err != nil {
			return nil, err
		}
	}
	return list.Object, nil
}

// request builds a list request (see List for the resourceVersion).
func (l lister) request(opts metav1.ListOptions) *rest.Request {
	if opts.ResourceVersion == "0" && opts.ResourceVersionMatch == "" && opts.Continue == "" {
		opts.ResourceVersion = ""
		opts.Limit = 0
	}
	return l.rc.Get().AbsPath(l.path()...).VersionedParams(&opts, metav1.ParameterCodec)
}

// listProto asks for protobuf and hands each item to each as it arrives
// (with the list's kind when it has none); a server that answers JSON is
// decoded as JSON. It returns the list's own fields.
func (l lister) listProto(ctx context.Context, req *rest.Request, each func(*unstructured.Unstructured) error) (map[string]any, error) {
	body, err := req.SetHeader("Accept", acceptProtobuf).Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	r := bufio.NewReaderSize(body, readBuffer)
	if first, _ := r.Peek(1); len(first) == 1 && first[0] == '{' {
		raw, err := io.ReadAll(r)
		if err != nil {
			return nil, fmt.Errorf("read list: %w", err)
		}
		return eachItem(raw, l.proj, each)
	}
	head := map[string]any{}
	err = decodeProtoListStream(r, l.pb, l.proj, head, func(obj map[string]any) error {
		u := &unstructured.Unstructured{Object: obj}
		setListKind(u, head)
		return each(u)
	})
	if err != nil {
		return nil, fmt.Errorf("decode list: %w", err)
	}
	return head, nil
}

// setListKind gives an item of a typed list, which carries no kind, the
// list's (as client-go does).
func setListKind(u *unstructured.Unstructured, head map[string]any) {
	if u.GetKind() != "" || u.GetAPIVersion() != "" {
		return
	}
	kind, _ := head["kind"].(string)
	apiVersion, _ := head["apiVersion"].(string)
	u.SetKind(strings.TrimSuffix(kind, "List"))
	u.SetAPIVersion(apiVersion)
}

func decodeList(raw []byte, proj *node.Paths) (*unstructured.UnstructuredList, error) {
	if proj != nil {
		return decodeProjectedList(raw, proj)
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("decode list: %w", err)
	}
	items, _ := obj["items"].([]any)
	delete(obj, "items")
	list := &unstructured.UnstructuredList{Object: obj, Items: make([]unstructured.Unstructured, 0, len(items))}
	// Items of a typed list carry no kind; like client-go, take it from the list.
	kind := strings.TrimSuffix(list.GetKind(), "List")
	for i, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("decode list: item %d is %T, not an object", i, it)
		}
		u := unstructured.Unstructured{Object: m}
		if u.GetKind() == "" && u.GetAPIVersion() == "" {
			u.SetKind(kind)
			u.SetAPIVersion(list.GetAPIVersion())
		}
		list.Items = append(list.Items, u)
	}
	return list, nil
}

// decodeProjectedList decodes a List response keeping only proj's paths of
// each item.
func decodeProjectedList(raw []byte, proj *node.Paths) (*unstructured.UnstructuredList, error) {
	head, items, err := projector{data: raw}.list(proj)
	if err != nil {
		return nil, fmt.Errorf("decode list: %w", err)
	}
	return projectedList(head, items), nil
}

// projectedList builds the list of projected items; items of a typed list
// carry no kind: like client-go, take it from the list.
func projectedList(head map[string]any, items []map[string]any) *unstructured.UnstructuredList {
	list := &unstructured.UnstructuredList{Object: head, Items: make([]unstructured.Unstructured, len(items))}
	for i, m := range items {
		list.Items[i] = unstructured.Unstructured{Object: m}
		setListKind(&list.Items[i], head)
	}
	return list
}

// Watch implements the dynamic client's Watch.
func (l lister) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	req := l.rc.Get().AbsPath(l.path()...).VersionedParams(&opts, metav1.ParameterCodec)
	if l.pb != nil {
		req.SetHeader("Accept", acceptProtobuf)
	}
	body, err := req.Stream(ctx)
	if err != nil {
		return nil, err
	}
	w := &streamWatch{body: body, ch: make(chan watch.Event), done: make(chan struct{}), proj: l.proj, pb: l.pb, record: l.record}
	go w.run()
	return w, nil
}

// streamWatch decodes a watch stream of JSON events.
type streamWatch struct {
	body io.ReadCloser
	ch   chan watch.Event
	done chan struct{}
	once sync.Once
	proj *node.Paths
	pb   *protoLayout // the resource's protobuf layout; the stream's first byte says which encoding came
	// record, when set, turns each event's object into a record object.
	record func(*unstructured.Unstructured) *recordObject
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
	r := bufio.NewReaderSize(w.body, readBuffer)
	// A JSON stream starts with '{'; a protobuf one with a frame's length.
	first, _ := r.Peek(1)
	proto := w.pb != nil && len(first) == 1 && first[0] != '{'
	dec := json.NewDecoder(r)
	dec.UseNumber()
	var frame []byte
	for {
		var typ watch.EventType
		var obj map[string]any
		var err error
		if proto {
			typ, obj, frame, err = w.nextProto(r, frame)
		} else {
			typ, obj, err = w.next(dec)
		}
		var ev watch.Event
		switch {
		case err == nil:
			ev = event(typ, obj)
			if u, ok := ev.Object.(*unstructured.Unstructured); ok && w.record != nil {
				ev.Object = w.record(u)
			}
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

// next decodes one event; with a projection only the read paths of its
// object (an ERROR event's status is decoded whole).
func (w *streamWatch) next(dec *json.Decoder) (watch.EventType, map[string]any, error) {
	if w.proj == nil {
		var frame struct {
			Type   watch.EventType `json:"type"`
			Object map[string]any  `json:"object"`
		}
		if err := dec.Decode(&frame); err != nil {
			return "", nil, err
		}
		return frame.Type, frame.Object, utiljson.ConvertMapNumbers(frame.Object, 0)
	}
	var frame struct {
		Type   watch.EventType `json:"type"`
		Object json.RawMessage `json:"object"`
	}
	if err := dec.Decode(&frame); err != nil {
		return "", nil, err
	}
	proj := w.proj
	if frame.Type == watch.Error || frame.Type == watch.Bookmark {
		proj = node.WholeObject()
	}
	obj, _, err := projector{data: frame.Object}.object(0, proj)
	return frame.Type, obj, err
}

// maxWatchFrame bounds one protobuf watch frame (an object is at most a
// few MiB in etcd); a larger length means a corrupt stream.
const maxWatchFrame = 64 << 20

// nextProto decodes one protobuf watch frame: a 4-byte big-endian length,
// then a WatchEvent (type = 1, object = 2 holding the object's envelope as
// raw = 1). buf is reused between frames.
func (w *streamWatch) nextProto(r *bufio.Reader, buf []byte) (watch.EventType, map[string]any, []byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return "", nil, buf, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxWatchFrame {
		return "", nil, buf, fmt.Errorf("%w: watch frame of %d bytes", errProto, size)
	}
	if cap(buf) < int(size) {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	if _, err := io.ReadFull(r, buf); err != nil {
		return "", nil, buf, err
	}
	typ, raw, err := watchEvent(buf)
	if err != nil {
		return "", nil, buf, err
	}
	apiVersion, kind, msg, err := unknownEnvelope(raw)
	if err != nil {
		return "", nil, buf, err
	}
	var obj map[string]any
	switch typ {
	case watch.Error:
		v, err := typedJSON(w.pb.status, msg)
		if err != nil {
			return "", nil, buf, err
		}
		obj, _ = v.(map[string]any)
	case watch.Bookmark:
		obj, err = w.pb.object.project(msg, node.WholeObject())
	default:
		obj, err = w.pb.object.project(msg, w.proj)
	}
	if err != nil {
		return "", nil, buf, err
	}
	if obj == nil {
		obj = map[string]any{}
	}
	// JSON events carry the object's type; protobuf has it on the envelope.
	whole := typ == watch.Error || typ == watch.Bookmark
	if _, read := w.proj.Field("apiVersion"); (read || whole) && apiVersion != "" {
		obj["apiVersion"] = apiVersion
	}
	if _, read := w.proj.Field("kind"); (read || whole) && kind != "" {
		obj["kind"] = kind
	}
	return typ, obj, buf, nil
}

// watchEvent reads a WatchEvent message: its type and its object's raw bytes.
func watchEvent(b []byte) (watch.EventType, []byte, error) {
	var typ watch.EventType
	var raw []byte
	ew := wire{b: b}
	for !ew.done() {
		num, wt, err := ew.tag()
		if err != nil {
			return "", nil, err
		}
		if wt != protowire.BytesType || num > 2 {
			if err := ew.skip(num, wt); err != nil {
				return "", nil, err
			}
			continue
		}
		v, err := ew.bytes()
		if err != nil {
			return "", nil, err
		}
		if num == 1 {
			typ = watch.EventType(v)
			continue
		}
		ow := wire{b: v} // RawExtension: raw = 1
		for !ow.done() {
			n, owt, err := ow.tag()
			if err != nil {
				return "", nil, err
			}
			if n != 1 || owt != protowire.BytesType {
				if err := ow.skip(n, owt); err != nil {
					return "", nil, err
				}
				continue
			}
			if raw, err = ow.bytes(); err != nil {
				return "", nil, err
			}
		}
	}
	if typ == "" || raw == nil {
		return "", nil, fmt.Errorf("%w: watch event without type or object", errProto)
	}
	return typ, raw, nil
}

func (w *streamWatch) stopped() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// event builds a watch event; an ERROR event carries a metav1.Status, as
// the reflector expects.
func event(t watch.EventType, obj map[string]any) watch.Event {
	if t != watch.Error {
		return watch.Event{Type: t, Object: &unstructured.Unstructured{Object: obj}}
	}
	var st metav1.Status
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &st); err != nil {
		st = apierrors.NewInternalError(fmt.Errorf("decode watch error: %w", err)).Status()
	}
	return errorEvent(st)
}

func errorEvent(st metav1.Status) watch.Event {
	return watch.Event{Type: watch.Error, Object: &st}
}

var _ watch.Interface = (*streamWatch)(nil)
