package wire

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/pipeline/pipeline/engine/node"
)

// Built-in resources (pods, services, config maps...) are listed and
// watched as protobuf when the source decodes a projection: the API server
// answers a LIST in protobuf faster than in JSON, and in fewer bytes
// (docs/performance.md). The decoder below walks the protobuf wire
// format with a layout derived from the Go API types' struct tags (field
// numbers from `protobuf:"..."`, names and omitempty from `json:"..."`),
// skips every field the graph does not read without allocating it, and
// yields exactly the values the JSON decoder yields for the same object:
// the same names, the same omitted empty fields, the same numbers, the
// same null. Subtrees read whole are decoded by the type's own generated
// Unmarshal and encoded to JSON, so their JSON form is the API's by
// construction. Resources without a Go type here (custom resources) keep
// JSON.

// protoMagic starts every protobuf-encoded object or list the API server
// sends (runtime.Unknown's envelope).
var protoMagic = []byte("k8s\x00")

var errProto = errors.New("malformed protobuf")

// pbKind is how a field's value is decoded.
type pbKind uint8

const (
	pbString  pbKind = iota // any Go string kind
	pbBytes                 // []byte: base64 in JSON
	pbBool                  // bool
	pbInt                   // integer kinds (varint)
	pbFloat64               // float64 (fixed64)
	pbFloat32               // float32 (fixed32)
	pbStruct                // a struct, decoded field by field
	pbTyped                 // a type with its own JSON form (Time, Quantity...): its Unmarshal, then JSON
)

// pbField is one field of a message as both encodings see it.
type pbField struct {
	idx       int // position in the message's fields
	num       int
	name      string // JSON name
	omitEmpty bool
	omitZero  bool
	pointer   bool // *T: absent means null (or omitted)
	repeated  bool // []T other than []byte
	isMap     bool
	kind      pbKind       // of the element (for maps: of the value)
	typ       reflect.Type // element type, pointers removed
	msg       *pbMessage   // kind pbMessage or pbTyped
	mapKey    *pbField     // isMap: the entry's key (field 1)
	mapVal    *pbField     // isMap: the entry's value (field 2)
}

// pbMessage is the layout of one Go struct type.
type pbMessage struct {
	typ    reflect.Type
	byNum  []*pbField // by field number; nil where none
	plans  sync.Map   // *node.Paths -> *projPlan
	nplans atomic.Int32
	fields []*pbField // in declaration order, for the defaults of absent fields
	// whole: a field of this message is inlined in JSON (`json:",inline"`
	// with its own protobuf field), or has no protobuf field but a JSON
	// name: the message cannot be decoded field by field and is always
	// decoded through its own Unmarshal.
	whole bool
	// unmarshal is the generated Unmarshal of *T, nil when T has none.
	unmarshal bool
	err       error // why this type cannot be decoded from protobuf
}

// Layouts are built under pbMu (LayoutFor) and only read once built.
var (
	pbMu    sync.Mutex
	pbCache = map[reflect.Type]*pbMessage{}
)

type protoUnmarshaler interface{ Unmarshal([]byte) error }

var (
	jsonMarshalerType  = reflect.TypeFor[json.Marshaler]()
	protoUnmarshalType = reflect.TypeFor[protoUnmarshaler]()
)

// messageOf returns the layout of struct type t, built once; pbMu is held.
func messageOf(t reflect.Type) *pbMessage {
	if m, ok := pbCache[t]; ok {
		return m
	}
	m := &pbMessage{typ: t, unmarshal: reflect.PointerTo(t).Implements(protoUnmarshalType)}
	pbCache[t] = m // before its fields, so that recursive types end
	if HasJSONForm(t) {
		return m // decoded whole by its Unmarshal: no field layout needed
	}
	m.err = m.build()
	return m
}

func (m *pbMessage) build() error {
	for i := range m.typ.NumField() {
		sf := m.typ.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		inline := sf.Anonymous && name == "" || strings.Contains(","+opts+",", ",inline,")
		pb := sf.Tag.Get("protobuf")
		if pb == "" {
			if sf.Name == "TypeMeta" && inline {
				continue // apiVersion and kind: on the envelope, not in the message
			}
			if name != "" || inline {
				m.whole = true // in JSON but not on the wire
			}
			continue
		}
		if inline {
			m.whole = true
		}
		_, rest, _ := strings.Cut(pb, ",") // wire type, field number, ...
		field, _, _ := strings.Cut(rest, ",")
		num, err := strconv.Atoi(field)
		if err != nil || num <= 0 || num > 1<<16 {
			return fmt.Errorf("%s.%s: protobuf tag %q", m.typ, sf.Name, pb)
		}
		if name == "" {
			name = sf.Name
		}
		f := &pbField{num: num, name: name,
			omitEmpty: strings.Contains(","+opts+",", ",omitempty,"),
			omitZero:  strings.Contains(","+opts+",", ",omitzero,")}
		if err := f.setType(sf.Type); err != nil {
			return fmt.Errorf("%s.%s: %w", m.typ, sf.Name, err)
		}
		f.idx = len(m.fields)
		for len(m.byNum) <= num {
			m.byNum = append(m.byNum, nil)
		}
		if m.byNum[num] != nil {
			return fmt.Errorf("%s.%s: field number %d used twice", m.typ, sf.Name, num)
		}
		m.byNum[num] = f
		m.fields = append(m.fields, f)
	}
	return nil
}

// setType fills the field's kind from its Go type.
func (f *pbField) setType(t reflect.Type) error {
	if t.Kind() == reflect.Pointer {
		f.pointer, t = true, t.Elem()
	}
	switch {
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		f.kind, f.typ = pbBytes, t
		return nil
	case t.Kind() == reflect.Slice:
		if f.pointer {
			return fmt.Errorf("pointer to slice %s", t)
		}
		f.repeated = true
		t = t.Elem()
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
	case t.Kind() == reflect.Map:
		if t.Key().Kind() != reflect.String {
			return fmt.Errorf("map key %s", t.Key())
		}
		f.isMap = true
		f.mapKey = &pbField{num: 1, kind: pbString, typ: t.Key()}
		f.mapVal = &pbField{num: 2}
		if err := f.mapVal.setType(t.Elem()); err != nil {
			return err
		}
		if f.mapVal.repeated || f.mapVal.isMap {
			return fmt.Errorf("map of %s", t.Elem())
		}
		f.typ = t
		return nil
	}
	f.typ = t
	if HasJSONForm(t) {
		if t.Kind() != reflect.Struct {
			return fmt.Errorf("%s has its own JSON form but is no message", t)
		}
		f.kind, f.msg = pbTyped, messageOf(t)
		if !f.msg.unmarshal {
			return fmt.Errorf("%s has no protobuf Unmarshal", t)
		}
		return nil
	}
	switch t.Kind() {
	case reflect.String:
		f.kind = pbString
	case reflect.Bool:
		f.kind = pbBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		f.kind = pbInt
	case reflect.Float64:
		f.kind = pbFloat64
	case reflect.Float32:
		f.kind = pbFloat32
	case reflect.Struct:
		f.kind, f.msg = pbStruct, messageOf(t)
	default:
		return fmt.Errorf("unsupported type %s", t)
	}
	return nil
}

// HasJSONForm reports whether t encodes itself to JSON.
func HasJSONForm(t reflect.Type) bool {
	return t.Implements(jsonMarshalerType) || reflect.PointerTo(t).Implements(jsonMarshalerType)
}

// Layout is what a source needs to decode one resource from
// protobuf: the layout of its objects and of its list.
type Layout struct {
	object    *pbMessage
	listItems int // the list's field number of items
	listMeta  int // the list's field number of metadata
	meta      *pbMessage
	status    *pbMessage // metav1.Status, the object of a watch ERROR event
}

// LayoutFor returns the protobuf layout of a built-in kind, or nil when
// the kind has no Go type here, or a type this decoder cannot read (the
// source then uses JSON).
func LayoutFor(gvk kschema.GroupVersionKind) *Layout {
	if gvk.Kind == "" || !scheme.Scheme.Recognizes(gvk) {
		return nil
	}
	obj, err := scheme.Scheme.New(gvk)
	if err != nil {
		return nil
	}
	list, err := scheme.Scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err != nil {
		return nil
	}
	ot, lt := reflect.TypeOf(obj).Elem(), reflect.TypeOf(list).Elem()
	pbMu.Lock()
	defer pbMu.Unlock()
	l := &Layout{object: messageOf(ot), status: messageOf(reflect.TypeFor[metav1.Status]())}
	lm := messageOf(lt)
	if !usable(l.object, map[*pbMessage]bool{}) || !usable(lm, map[*pbMessage]bool{}) {
		return nil
	}
	for _, f := range lm.fields {
		switch f.name {
		case "items":
			if f.repeated && f.msg == l.object {
				l.listItems = f.num
			}
		case "metadata":
			if f.msg != nil {
				l.listMeta, l.meta = f.num, f.msg
			}
		}
	}
	if l.listItems == 0 || l.listMeta == 0 {
		return nil
	}
	return l
}

// usable reports whether m and every message below it can be decoded.
func usable(m *pbMessage, seen map[*pbMessage]bool) bool {
	if seen[m] {
		return true
	}
	seen[m] = true
	if m.err != nil {
		return false
	}
	for _, f := range m.fields {
		if f.msg != nil && !usable(f.msg, seen) {
			return false
		}
		if f.mapVal != nil && f.mapVal.msg != nil && !usable(f.mapVal.msg, seen) {
			return false
		}
	}
	return true
}

// wire reads protobuf's wire format from a message in memory, through
// protowire, which checks every bound: no input panics.
type wire struct {
	b []byte
	i int
}

func (w *wire) done() bool { return w.i >= len(w.b) }

// malformed is protowire's error for a consumed length n < 0.
func malformed(n int) error { return fmt.Errorf("%w: %w", errProto, protowire.ParseError(n)) }

// tag reads a field's number and wire type.
func (w *wire) tag() (int, protowire.Type, error) {
	num, wt, n := protowire.ConsumeTag(w.b[w.i:])
	if n < 0 {
		return 0, 0, malformed(n)
	}
	w.i += n
	return int(num), wt, nil
}

// bytes reads a length-delimited value.
func (w *wire) bytes() ([]byte, error) {
	b, n := protowire.ConsumeBytes(w.b[w.i:])
	if n < 0 {
		return nil, malformed(n)
	}
	w.i += n
	return b, nil
}

// number reads a varint, fixed64 or fixed32 value.
func (w *wire) number(wt protowire.Type) (uint64, error) {
	var v uint64
	var n int
	switch wt {
	case protowire.VarintType:
		v, n = protowire.ConsumeVarint(w.b[w.i:])
	case protowire.Fixed64Type:
		v, n = protowire.ConsumeFixed64(w.b[w.i:])
	default:
		var v32 uint32
		v32, n = protowire.ConsumeFixed32(w.b[w.i:])
		v = uint64(v32)
	}
	if n < 0 {
		return 0, malformed(n)
	}
	w.i += n
	return v, nil
}

// skip passes over a value of wire type wt (groups included).
func (w *wire) skip(num int, wt protowire.Type) error {
	n := protowire.ConsumeFieldValue(protowire.Number(num), wt, w.b[w.i:])
	if n < 0 {
		return malformed(n)
	}
	w.i += n
	return nil
}

// unknownEnvelope reads the magic and runtime.Unknown's envelope: the type
// (apiVersion, kind) and the raw message.
func unknownEnvelope(b []byte) (apiVersion, kind string, raw []byte, err error) {
	if len(b) < len(protoMagic) || string(b[:len(protoMagic)]) != string(protoMagic) {
		return "", "", nil, fmt.Errorf("%w: no protobuf envelope", errProto)
	}
	err = bytesFields(b[len(protoMagic):], func(num int, v []byte) (err error) {
		switch num {
		case 1: // typeMeta
			apiVersion, kind, err = typeMeta(v)
		case 2:
			raw = v
		case 3: // contentEncoding
			if len(v) > 0 {
				err = fmt.Errorf("%w: content encoding %q", errProto, v)
			}
		}
		return err
	})
	if err != nil {
		return "", "", nil, err
	}
	return apiVersion, kind, raw, nil
}

// bytesFields calls f with the number and value of each length-delimited
// field of message b, in order, and skips the other fields.
func bytesFields(b []byte, f func(num int, v []byte) error) error {
	w := wire{b: b}
	for !w.done() {
		num, wt, err := w.tag()
		if err != nil {
			return err
		}
		if wt != protowire.BytesType {
			if err := w.skip(num, wt); err != nil {
				return err
			}
			continue
		}
		v, err := w.bytes()
		if err != nil {
			return err
		}
		if err := f(num, v); err != nil {
			return err
		}
	}
	return nil
}

// maxItem bounds one encoded object (etcd stores at most a few MiB); a
// larger length means a corrupt response, not an allocation to make.
const maxItem = 64 << 20

// decodeProtoListStream decodes a protobuf List response as it arrives,
// one item at a time, handing each projected item to each: the response
// (megabytes for thousands of pods) is never held whole, and decoding overlaps the
// transfer. It fills head with the list's own fields (apiVersion, kind,
// metadata); apiVersion and kind are there before the first item (the
// envelope's type comes first).
func decodeProtoListStream(r io.Reader, l *Layout, p *node.Paths, head map[string]any, each func(map[string]any) error) error {
	br := bufio.NewReaderSize(r, ReadBuffer)
	magic, err := br.Peek(len(protoMagic))
	if err != nil || !bytes.Equal(magic, protoMagic) {
		return fmt.Errorf("%w: no protobuf envelope", errProto)
	}
	_, _ = br.Discard(len(protoMagic))
	head["apiVersion"], head["kind"] = "", ""
	env := streamed{r: br, left: math.MaxInt64} // runtime.Unknown, to the end of the response
	for {
		if _, err := br.Peek(1); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return err
		}
		num, n, err := env.next()
		switch {
		case err != nil:
			return err
		case n < 0: // not length-delimited: passed over
		case num == 2: // raw: the list message
			list := streamed{r: br, left: int64(n)}
			if err := l.streamList(&list, p, head, each); err != nil {
				return err
			}
			env.left -= int64(n)
		case num != 1 && num != 3:
			err = env.skip(n)
		case n > maxItem:
			return fmt.Errorf("%w: envelope field of %d bytes", errProto, n)
		default:
			var v []byte
			if v, err = env.read(nil, n); err == nil && num == 1 { // typeMeta
				head["apiVersion"], head["kind"], err = typeMeta(v)
			} else if err == nil && len(v) > 0 { // contentEncoding
				err = fmt.Errorf("%w: content encoding %q", errProto, v)
			}
		}
		if err != nil {
			return err
		}
	}
	if _, ok := head["metadata"]; !ok {
		head["metadata"] = map[string]any{}
	}
	return nil
}

// streamList reads a list message: its metadata into head, its items
// projected on p.
func (l *Layout) streamList(s *streamed, p *node.Paths, head map[string]any, each func(map[string]any) error) error {
	var buf []byte
	items := 0
	for s.left > 0 {
		num, n, err := s.next()
		switch {
		case err != nil:
			return err
		case n < 0:
			continue
		case num != l.listItems && num != l.listMeta:
			if err := s.skip(n); err != nil {
				return err
			}
			continue
		case n > maxItem:
			return fmt.Errorf("%w: list item of %d bytes", errProto, n)
		}
		if buf, err = s.read(buf, n); err != nil {
			return err
		}
		if num == l.listMeta {
			if head["metadata"], err = typedJSON(l.meta, buf); err != nil {
				return err
			}
			continue
		}
		obj, err := l.object.project(buf, p)
		if err != nil {
			return fmt.Errorf("item %d: %w", items, err)
		}
		if err := each(obj); err != nil {
			return err
		}
		items++
	}
	return nil
}

// typeMeta reads runtime.TypeMeta: apiVersion = 1, kind = 2.
func typeMeta(b []byte) (apiVersion, kind string, err error) {
	err = bytesFields(b, func(num int, v []byte) error {
		switch num {
		case 1:
			apiVersion = string(v)
		case 2:
			kind = string(v)
		}
		return nil
	})
	return apiVersion, kind, err
}

// streamed is a message read from a stream, left bytes of it to go. Tags
// and lengths are read through protowire from the reader's buffer.
type streamed struct {
	r    *bufio.Reader
	left int64
}

// next reads the next field's tag and, for a length-delimited field, the
// length n of its value, which follows in the stream; it passes over the
// value of another field whole (n < 0; a list's envelope has no groups).
func (s *streamed) next() (num, n int, err error) {
	b, _ := s.r.Peek(int(min(s.left, 2*binary.MaxVarintLen64)))
	tag, wt, k := protowire.ConsumeTag(b)
	if k < 0 {
		return 0, 0, malformed(k)
	}
	var v uint64
	var m int
	if wt == protowire.BytesType {
		v, m = protowire.ConsumeVarint(b[k:])
	} else {
		m = protowire.ConsumeFieldValue(tag, wt, b[k:])
	}
	if m < 0 {
		return 0, 0, malformed(m)
	}
	k += m
	if v > uint64(s.left-int64(k)) || v > math.MaxInt32 {
		return 0, 0, fmt.Errorf("%w: length %d beyond its message", errProto, v)
	}
	_, _ = s.r.Discard(k) // peeked
	s.left -= int64(k)
	if wt != protowire.BytesType {
		return int(tag), -1, nil
	}
	return int(tag), int(v), nil
}

// read reads the n bytes of a value into buf (grown as needed).
func (s *streamed) read(buf []byte, n int) ([]byte, error) {
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(s.r, buf); err != nil {
		return nil, fmt.Errorf("%w: %w", errProto, io.ErrUnexpectedEOF)
	}
	s.left -= int64(n)
	return buf, nil
}

// skip passes over the n bytes of a value.
func (s *streamed) skip(n int) error {
	if _, err := s.r.Discard(n); err != nil {
		return fmt.Errorf("%w: %w", errProto, io.ErrUnexpectedEOF)
	}
	s.left -= int64(n)
	return nil
}

// maxPlans bounds the plans a message keeps.
const maxPlans = 256

// projPlan is what one projection reads of a message's fields, by
// declaration index: worked out once per message and projection, so that
// decoding an object looks up no field name.
type projPlan struct {
	read []bool
	sub  []*node.Paths
	n    int // fields read
}

// A projection must not change once objects are decoded with it (a
// source's never does: the compiler fixes it before the source runs).
func (m *pbMessage) plan(p *node.Paths) *projPlan {
	if pl, ok := m.plans.Load(p); ok {
		return pl.(*projPlan)
	}
	pl := &projPlan{read: make([]bool, len(m.fields)), sub: make([]*node.Paths, len(m.fields))}
	for i, f := range m.fields {
		pl.sub[i], pl.read[i] = p.Field(f.name)
		if pl.read[i] {
			pl.n++
		}
	}
	// Projections live as long as their source; a process that reloads
	// its configuration many times must not keep every old one.
	if m.nplans.Add(1) > maxPlans {
		m.plans.Clear()
		m.nplans.Store(1)
	}
	m.plans.Store(p, pl)
	return pl
}

// project decodes message bytes b keeping p's paths, as the JSON decoder
// would yield them.
func (m *pbMessage) project(b []byte, p *node.Paths) (map[string]any, error) {
	if m.whole || p.Whole() {
		v, err := typedJSON(m, b)
		if err != nil {
			return nil, err
		}
		obj, _ := v.(map[string]any)
		if obj == nil {
			obj = map[string]any{}
		}
		return projectMap(obj, p), nil
	}
	pl := m.plan(p)
	out := make(map[string]any, pl.n)
	var seen uint64 // fields seen, by declaration index (first 64)
	w := wire{b: b}
	for !w.done() {
		num, wt, err := w.tag()
		if err != nil {
			return nil, err
		}
		var f *pbField
		if num < len(m.byNum) {
			f = m.byNum[num]
		}
		if f == nil {
			if err := w.skip(num, wt); err != nil {
				return nil, err
			}
			continue
		}
		sub, read := pl.sub[f.idx], pl.read[f.idx]
		if !read {
			if err := w.skip(num, wt); err != nil {
				return nil, err
			}
			continue
		}
		if err := f.decode(&w, wt, sub, out); err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		if f.idx < 64 {
			seen |= 1 << f.idx
		}
	}
	// Fields absent from the wire still show in JSON unless omitted.
	for i, f := range m.fields {
		if i < 64 && seen&(1<<i) != 0 {
			continue
		}
		if _, done := out[f.name]; done {
			continue
		}
		if !pl.read[i] {
			continue
		}
		if err := f.absent(pl.sub[i], out); err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return out, nil
}

// decode reads one occurrence of f (wire type wt) into out.
func (f *pbField) decode(w *wire, wt protowire.Type, sub *node.Paths, out map[string]any) error {
	switch {
	case f.isMap:
		if wt != protowire.BytesType {
			return fmt.Errorf("%w: map entry with wire type %d", errProto, wt)
		}
		entry, err := w.bytes()
		if err != nil {
			return err
		}
		return f.mapEntry(entry, sub, out)
	case f.repeated:
		list, _ := out[f.name].([]any)
		if wt == protowire.BytesType && f.elemWire() != protowire.BytesType { // packed scalars
			b, err := w.bytes()
			if err != nil {
				return err
			}
			pw := wire{b: b}
			for !pw.done() {
				v, err := f.scalar(&pw, f.elemWire())
				if err != nil {
					return err
				}
				list = append(list, v)
			}
		} else {
			v, _, err := f.value(w, wt, nil)
			if err != nil {
				return err
			}
			list = append(list, v)
		}
		out[f.name] = list
		return nil
	}
	v, omit, err := f.value(w, wt, sub)
	switch {
	case err != nil:
		return err
	case omit:
		delete(out, f.name)
	default:
		out[f.name] = v
	}
	return nil
}

// elemWire is the wire type of one value of f's kind; repeated scalars of
// another than BytesType may also come packed in one length-delimited value.
func (f *pbField) elemWire() protowire.Type {
	switch f.kind {
	case pbFloat64:
		return protowire.Fixed64Type
	case pbFloat32:
		return protowire.Fixed32Type
	case pbBool, pbInt:
		return protowire.VarintType
	}
	return protowire.BytesType
}

// value reads one value of f's element kind; sub is what is read below it
// (nil: whole). omit reports that omitempty or omitzero leave the value
// out of JSON (never for an element of a list or map).
func (f *pbField) value(w *wire, wt protowire.Type, sub *node.Paths) (v any, omit bool, err error) {
	omits := (f.omitEmpty || f.omitZero) && !f.pointer && !f.repeated
	if f.kind != pbStruct && f.kind != pbTyped {
		v, err := f.scalar(w, wt)
		return v, err == nil && omits && emptyJSON(v), err
	}
	if wt != protowire.BytesType {
		return nil, false, fmt.Errorf("%w: message with wire type %d", errProto, wt)
	}
	b, err := w.bytes()
	if err != nil {
		return nil, false, err
	}
	if omits && f.omitZero && zeroTyped(f.msg, b) {
		return nil, true, nil
	}
	v, err = f.message(b, sub)
	return v, false, err
}

// message decodes a nested message: field by field when only part of it
// is read, else through its own Unmarshal and JSON.
func (f *pbField) message(b []byte, sub *node.Paths) (any, error) {
	if f.kind == pbTyped {
		v, err := typedJSON(f.msg, b)
		if err != nil {
			return nil, err
		}
		if obj, ok := v.(map[string]any); ok && !sub.Whole() {
			return projectMap(obj, sub), nil
		}
		return v, nil
	}
	return f.msg.project(b, sub)
}

// scalar reads one value of f's scalar kind, which came with wire type wt.
func (f *pbField) scalar(w *wire, wt protowire.Type) (any, error) {
	if f.kind > pbFloat32 || wt != f.elemWire() {
		return nil, fmt.Errorf("%w: %s field with wire type %d", errProto, f.typ, wt)
	}
	if wt == protowire.BytesType {
		b, err := w.bytes()
		switch {
		case err != nil:
			return nil, err
		case f.kind == pbBytes:
			return base64.StdEncoding.EncodeToString(b), nil
		}
		return jsonString(b), nil
	}
	v, err := w.number(wt)
	if err != nil {
		return nil, err
	}
	switch f.kind {
	case pbBool:
		return v != 0, nil
	case pbInt:
		return f.integer(v), nil
	case pbFloat64:
		return jsonFloat(math.Float64frombits(v), 64), nil
	}
	return jsonFloat(float64(math.Float32frombits(uint32(v))), 32), nil
}

// integer converts a varint as Go's generated code reads it into the
// field's type, then as JSON decoding yields it (int64, or its json.Number
// text above int64's range).
func (f *pbField) integer(v uint64) any {
	switch f.typ.Kind() {
	case reflect.Int32:
		return int64(int32(v))
	case reflect.Uint32:
		return int64(uint32(v))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint64:
		if v > math.MaxInt64 {
			return json.Number(strconv.FormatUint(v, 10))
		}
	}
	return int64(v)
}

// jsonFloat is a float as encoding/json writes it and the JSON decoder
// (exact) reads it back: integral values become int64, others the
// json.Number of their shortest text, as the same object read as JSON.
func jsonFloat(v float64, bits int) any {
	var js []byte
	var err error
	if bits == 32 {
		js, err = json.Marshal(float32(v))
	} else {
		js, err = json.Marshal(v)
	}
	if err != nil { // NaN and infinities have no JSON form
		return v
	}
	out, err := exact(js)
	if err != nil {
		return v
	}
	return out
}

// jsonString is b as a string after a JSON round trip: invalid UTF-8
// becomes U+FFFD, byte by byte, as encoding/json writes it.
func jsonString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.Write(b[:n])
		}
		b = b[n:]
	}
	return sb.String()
}

// mapEntry decodes one map entry (key = field 1, value = field 2) into the
// JSON object out[f.name], keeping only the keys sub reads.
func (f *pbField) mapEntry(entry []byte, sub *node.Paths, out map[string]any) error {
	var key string
	var val []byte // the value as on the wire, nil when absent
	var valWire protowire.Type
	w := wire{b: entry}
	for !w.done() {
		num, wt, err := w.tag()
		if err != nil {
			return err
		}
		if num == 1 {
			k, err := f.mapKey.scalar(&w, wt)
			if err != nil {
				return err
			}
			key, _ = k.(string)
			continue
		}
		start := w.i
		if err := w.skip(num, wt); err != nil {
			return err
		}
		if num == 2 {
			val, valWire = entry[start:w.i], wt
		}
	}
	m, _ := out[f.name].(map[string]any)
	if m == nil {
		m = map[string]any{}
		out[f.name] = m
	}
	below, read := sub.Field(key)
	if !read {
		return nil
	}
	var v any
	var err error
	if val != nil {
		v, _, err = f.mapVal.value(&wire{b: val}, valWire, below)
	} else {
		v, err = f.mapVal.zero(below)
	}
	if err != nil {
		return err
	}
	m[key] = v
	return nil
}

// absent writes what JSON shows for a field absent from the wire: the
// generated code always writes scalars and structs, so this is a nil
// pointer, an empty list or map, or an older server's message.
func (f *pbField) absent(sub *node.Paths, out map[string]any) error {
	omit := f.omitEmpty || f.omitZero
	switch {
	case f.pointer || f.repeated || f.isMap || f.kind == pbBytes:
		if !omit {
			out[f.name] = nil
		}
		return nil
	case f.kind == pbStruct || f.kind == pbTyped:
		if f.omitZero && zeroTyped(f.msg, nil) {
			return nil
		}
	case omit:
		return nil
	}
	v, err := f.zero(sub)
	if err != nil {
		return err
	}
	out[f.name] = v
	return nil
}

// zero is the JSON form of f's zero value (a []byte is empty, not nil:
// that is how the generated code starts a map's []byte value; an absent
// []byte field is nil, and absent does not ask).
func (f *pbField) zero(sub *node.Paths) (any, error) {
	switch f.kind {
	case pbString, pbBytes:
		return "", nil
	case pbBool:
		return false, nil
	case pbInt, pbFloat64, pbFloat32:
		return int64(0), nil
	}
	return f.message(nil, sub)
}

// emptyJSON reports whether omitempty leaves out v, a scalar's value.
func emptyJSON(v any) bool {
	switch v := v.(type) {
	case string:
		return v == ""
	case bool:
		return !v
	case int64:
		return v == 0
	case float64:
		return v == 0
	}
	return false
}

// typedJSON decodes b with the type's generated Unmarshal and returns its
// JSON form as JSON decoding yields it.
func typedJSON(m *pbMessage, b []byte) (any, error) {
	if !m.unmarshal {
		return nil, fmt.Errorf("%s has no protobuf Unmarshal", m.typ)
	}
	v := reflect.New(m.typ)
	if err := unmarshalSafe(v.Interface().(protoUnmarshaler), b); err != nil {
		return nil, fmt.Errorf("decode %s: %w", m.typ.Name(), err)
	}
	js, err := json.Marshal(v.Interface())
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", m.typ.Name(), err)
	}
	out, err := exact(js)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", m.typ.Name(), err)
	}
	return out, nil
}

// unmarshalSafe runs a generated Unmarshal, turning a panic on malformed
// input into an error.
func unmarshalSafe(u protoUnmarshaler, b []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", errProto, r)
		}
	}()
	return u.Unmarshal(b)
}

// zeroTyped reports whether b decodes to the type's zero value (for omitzero).
func zeroTyped(m *pbMessage, b []byte) bool {
	v := reflect.New(m.typ)
	if err := unmarshalSafe(v.Interface().(protoUnmarshaler), b); err != nil {
		return false
	}
	if z, ok := v.Interface().(interface{ IsZero() bool }); ok {
		return z.IsZero()
	}
	return v.Elem().IsZero()
}

// projectMap keeps p's paths of a decoded JSON object.
func projectMap(obj map[string]any, p *node.Paths) map[string]any {
	if p.Whole() {
		return obj
	}
	out := map[string]any{}
	for k, v := range obj {
		sub, ok := p.Field(k)
		if !ok {
			continue
		}
		if m, isMap := v.(map[string]any); isMap && !sub.Whole() {
			v = projectMap(m, sub)
		}
		out[k] = v
	}
	return out
}

// watchEvent reads a WatchEvent message: its type and its object's raw bytes.
func watchEvent(b []byte) (watch.EventType, []byte, error) {
	var typ watch.EventType
	var raw []byte
	err := bytesFields(b, func(num int, v []byte) error {
		switch num {
		case 1:
			typ = watch.EventType(v)
		case 2: // RawExtension: raw = 1
			return bytesFields(v, func(n int, r []byte) error {
				if n == 1 {
					raw = r
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	if typ == "" || raw == nil {
		return "", nil, fmt.Errorf("%w: watch event without type or object", errProto)
	}
	return typ, raw, nil
}
