package wire

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/pipeline/pipeline/engine/node"
)

// Decoder reads the bodies of one resource's responses.
type Decoder interface {
	// List reads a list body, calling each for every item as it is decoded
	// (an item of a typed list, which carries no kind, gets the list's),
	// and returns the list's own fields (apiVersion, kind, metadata).
	List(each func(obj map[string]any) error) (map[string]any, error)
	// Event reads the next event of a watch body. An ERROR or BOOKMARK
	// event's object is decoded whole. It returns io.EOF at the end.
	Event() (watch.EventType, map[string]any, error)
}

// ReadBuffer is the buffer to put between a response body and a decoder:
// a few TCP segments, so that a decoder reading byte by byte rarely
// reaches the socket.
const ReadBuffer = 64 << 10

// For returns the decoder of the body r holds (a list or a watch stream): protobuf when the resource
// has a layout (pb, for a projection of a built-in resource) and the body
// is not JSON, else JSON, keeping only proj's paths (nil: whole objects).
func For(r *bufio.Reader, pb *Layout, proj *node.Paths) Decoder {
	first, _ := r.Peek(1)
	if pb != nil && proj != nil && len(first) == 1 && first[0] != '{' {
		return &protoDecoder{r: r, pb: pb, proj: proj}
	}
	if proj == nil {
		proj = node.WholeObject()
	}
	return &jsonDecoder{r: r, proj: proj}
}

// jsonDecoder reads JSON, keeping proj's paths (json.go; whole objects
// are the projection that reads everything).
type jsonDecoder struct {
	r    *bufio.Reader
	dec  *json.Decoder // a watch stream's, made by the first Event
	proj *node.Paths
}

func (d *jsonDecoder) List(each func(map[string]any) error) (map[string]any, error) {
	raw, err := io.ReadAll(d.r)
	if err != nil {
		return nil, fmt.Errorf("read list: %w", err)
	}
	head, items, err := projector{data: raw}.list(d.proj)
	if err != nil {
		return nil, fmt.Errorf("decode list: %w", err)
	}
	for _, obj := range items {
		setListKind(obj, head)
		if err := each(obj); err != nil {
			return nil, err
		}
	}
	return head, nil
}

func (d *jsonDecoder) Event() (watch.EventType, map[string]any, error) {
	if d.dec == nil {
		d.dec = json.NewDecoder(d.r)
		d.dec.UseNumber()
	}
	var frame struct {
		Type   watch.EventType `json:"type"`
		Object json.RawMessage `json:"object"`
	}
	if err := d.dec.Decode(&frame); err != nil {
		return "", nil, err
	}
	proj := d.proj
	if frame.Type == watch.Error || frame.Type == watch.Bookmark {
		proj = node.WholeObject()
	}
	obj, _, err := projector{data: frame.Object}.object(0, proj)
	return frame.Type, obj, err
}

// setListKind gives an item of a typed list, which carries no kind, the
// list's (as client-go does).
func setListKind(obj, head map[string]any) {
	if k, _ := obj["kind"].(string); k != "" {
		return
	}
	if v, _ := obj["apiVersion"].(string); v != "" {
		return
	}
	kind, _ := head["kind"].(string)
	apiVersion, _ := head["apiVersion"].(string)
	obj["kind"], obj["apiVersion"] = strings.TrimSuffix(kind, "List"), apiVersion
}

// protoDecoder reads protobuf (protobuf.go).
type protoDecoder struct {
	r     *bufio.Reader
	pb    *Layout
	proj  *node.Paths
	frame []byte // reused between watch frames
}

func (d *protoDecoder) List(each func(map[string]any) error) (map[string]any, error) {
	head := map[string]any{}
	err := decodeProtoListStream(d.r, d.pb, d.proj, head, func(obj map[string]any) error {
		setListKind(obj, head)
		return each(obj)
	})
	if err != nil {
		return nil, fmt.Errorf("decode list: %w", err)
	}
	return head, nil
}

// maxWatchFrame bounds one protobuf watch frame (an object is at most a
// few MiB in etcd); a larger length means a corrupt stream.
const maxWatchFrame = 64 << 20

// Event decodes one protobuf watch frame: a 4-byte big-endian length,
// then a WatchEvent (type = 1, object = 2 holding the object's envelope as
// raw = 1).
func (d *protoDecoder) Event() (watch.EventType, map[string]any, error) {
	var n [4]byte
	if _, err := io.ReadFull(d.r, n[:]); err != nil {
		return "", nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxWatchFrame {
		return "", nil, fmt.Errorf("%w: watch frame of %d bytes", errProto, size)
	}
	if cap(d.frame) < int(size) {
		d.frame = make([]byte, size)
	}
	d.frame = d.frame[:size]
	if _, err := io.ReadFull(d.r, d.frame); err != nil {
		return "", nil, err
	}
	typ, raw, err := watchEvent(d.frame)
	if err != nil {
		return "", nil, err
	}
	apiVersion, kind, msg, err := unknownEnvelope(raw)
	if err != nil {
		return "", nil, err
	}
	proj := d.proj
	if typ == watch.Error || typ == watch.Bookmark {
		proj = node.WholeObject()
	}
	var obj map[string]any
	if typ == watch.Error {
		var v any
		v, err = typedJSON(d.pb.status, msg)
		obj, _ = v.(map[string]any)
	} else {
		obj, err = d.pb.object.project(msg, proj)
	}
	if err != nil {
		return "", nil, err
	}
	if obj == nil {
		obj = map[string]any{}
	}
	// JSON events carry the object's type; protobuf has it on the envelope.
	if _, read := proj.Field("apiVersion"); read && apiVersion != "" {
		obj["apiVersion"] = apiVersion
	}
	if _, read := proj.Field("kind"); read && kind != "" {
		obj["kind"] = kind
	}
	return typ, obj, nil
}

var (
	_ Decoder = (*jsonDecoder)(nil)
	_ Decoder = (*protoDecoder)(nil)
)
