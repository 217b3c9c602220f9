package kubernetes

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/zclconf/go-cty/cty"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/ctyconv"
	"github.com/pipeline/pipeline/internal/kobject"
)

// object is what the informer cache holds, one per Kubernetes object,
// whatever the source keeps of it: its identity, in the record's origin
// (handed out by reference, origin.go; informers reach it through
// GetObjectMeta), its id namespace/name (one string, also its record key
// when that is namespace/name, and the cache's key), its record key, and
// its content:
//   - with a projection, the record value in packed form (packed.go): the
//     object is its own packed value, so the source's collection keeps
//     the very object the cache holds, and the cty value is built only
//     for the consumers that receive it;
//   - otherwise with store = "memory", the whole object (more.whole);
//   - with store = "cached", a digest of the content (to tell real changes
//     from resourceVersion-only ones) and the value from the transform to
//     the event handler, which emits it and drops it (more.pending).
//
// Strings many objects share (namespace, apiVersion and kind) are held
// once (interner), and the name shares the id's bytes. What few objects
// have (an error) is in more, which a projected object does without.
type object struct {
	kind  *metav1.TypeMeta // shared by the objects of one type (interner)
	org   node.Origin      // Source, Namespace, Name, UID, ResourceVersion, Object (the record key)
	objID string
	packed
	more *content // nil with a projection, unless the object has an error
}

// content is what an object without a projection keeps of its content,
// and the error of any object that has one.
type content struct {
	whole   *unstructured.Unstructured // store = "memory"
	digest  [sha256.Size]byte          // store = "cached"
	pending atomic.Pointer[cty.Value]  // store = "cached": the value until emitted
	err     error                      // the key's (wrapping kobject.ErrMissing) or the value's
}

// content returns more, made when missing.
func (o *object) content() *content {
	if o.more == nil {
		o.more = &content{}
	}
	return o.more
}

// fail records the object's first error.
func (o *object) fail(err error) {
	if c := o.content(); c.err == nil {
		c.err = err
	}
}

// failed returns the object's error, if any.
func (o *object) failed() error {
	if o.more == nil {
		return nil
	}
	return o.more.err
}

// projected reports whether the object holds its record value packed.
func (o *object) projected() bool { return o.packed.sh != nil }

var errValueGone = errors.New("value already emitted")

// newObject makes the identity and key of u's cached form (ignore_fields
// already removed) for source src.
func newObject(u *unstructured.Unstructured, src string, keyer *kobject.Keyer, in *interner) *object {
	o := &object{org: node.Origin{Source: src, Name: u.GetName(), UID: string(u.GetUID()), ResourceVersion: u.GetResourceVersion()}}
	o.kind, o.org.Namespace = in.intern(u.GetAPIVersion(), u.GetKind(), u.GetNamespace())
	o.objID = id(o.org.Namespace, o.org.Name)
	o.org.Name = o.objID[len(o.objID)-len(o.org.Name):] // one string for both
	if key, err := keyer.Key(u.Object); err != nil {
		o.fail(err)
	} else if key == o.objID {
		o.org.Object = o.objID // one string for both
	} else {
		o.org.Object = key
	}
	return o
}

// newRecordObject makes the cached form of a projected object. The record
// value holds only what the graph reads (sh): not the identity fields the
// source decodes for itself (apiVersion, kind, name, namespace, uid,
// resourceVersion) unless an expression reads them, so that a write
// changing nothing the graph reads yields an equal value.
func newRecordObject(u *unstructured.Unstructured, src string, keyer *kobject.Keyer, sh *shape, in *interner) *object {
	o := newObject(u, src, keyer, in)
	o.packed.sh, o.packed.slots = sh, make([]any, sh.slots)
	if err := sh.fill(u.Object, o.slots); err != nil {
		o.fail(err)
	}
	// The value's namespace and name are the identity's strings: one box
	// of the namespace for all objects, and the name's bytes in the id.
	if sh.nsSlot >= 0 && o.slots[sh.nsSlot] == any(o.org.Namespace) {
		o.slots[sh.nsSlot] = in.box(o.org.Namespace)
	}
	if sh.nameSlot >= 0 && o.slots[sh.nameSlot] == any(o.org.Name) {
		o.slots[sh.nameSlot] = o.org.Name
	}
	return o
}

// newSlim makes the cached form of an object with store = "cached". The
// value rides along only when it will be emitted: a relist delivers
// unchanged objects (same resourceVersion) to no handler, so their value
// would stay in the cache.
func newSlim(u *unstructured.Unstructured, src string, keyer *kobject.Keyer, in *interner, withValue bool) *object {
	o := newObject(u, src, keyer, in)
	c := o.content()
	if withValue {
		if v, err := kobject.Value(u.Object); err == nil {
			c.pending.Store(&v)
		}
	}
	if b, err := json.Marshal(kobject.WithoutResourceVersion(u.Object)); err == nil {
		c.digest = sha256.Sum256(b)
	}
	return o
}

// GetObjectKind implements runtime.Object with a copy: the type is shared.
func (o *object) GetObjectKind() schema.ObjectKind {
	if o.kind == nil { // the informer's example object
		return schema.EmptyObjectKind
	}
	k := *o.kind
	return &k
}

// DeepCopyObject implements runtime.Object; a packed value is immutable
// and shared.
func (o *object) DeepCopyObject() runtime.Object {
	c := *o
	if o.more != nil {
		c.more = &content{digest: o.more.digest, err: o.more.err}
		if o.more.whole != nil {
			c.more.whole = o.more.whole.DeepCopy()
		}
		c.more.pending.Store(o.more.pending.Load())
	}
	return &c
}

// GetObjectMeta implements metav1.ObjectMetaAccessor (meta.Accessor): the
// informer's keys and the reflector's resourceVersion come from it, and
// the mark of the bookmark ending a watch-list's initial events.
func (o *object) GetObjectMeta() metav1.Object {
	m := &metav1.ObjectMeta{Namespace: o.org.Namespace, Name: o.org.Name, UID: types.UID(o.org.UID), ResourceVersion: o.org.ResourceVersion}
	if o.kind == &initialEventsEnd {
		m.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	return m
}

// initialEventsEnd is the kind of a bookmark object annotated
// k8s.io/initial-events-end: the mark is where no cached object's kind
// can be, so that no object carries a field for it.
var initialEventsEnd metav1.TypeMeta

// bookmark makes the object of a watch's BOOKMARK event: its
// resourceVersion, and whether it ends a watch-list's initial events.
func bookmark(u *unstructured.Unstructured) *object {
	o := &object{org: node.Origin{ResourceVersion: u.GetResourceVersion()}}
	if u.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
		o.kind = &initialEventsEnd
	}
	return o
}

// keyed reports whether o (nil: none) has a record key.
func (o *object) keyed() bool { return o != nil && !errors.Is(o.failed(), kobject.ErrMissing) }

// key returns the record key; the error wraps kobject.ErrMissing.
func (o *object) key() (string, error) {
	if err := o.failed(); errors.Is(err, kobject.ErrMissing) {
		return "", err
	}
	return o.org.Object, nil
}

// value returns the record value (packed with a projection); with store
// = "cached" it yields it once.
func (o *object) value() (cty.Value, error) {
	switch err := o.failed(); {
	case err != nil:
		return cty.NilVal, err
	case o.projected():
		return node.PackedVal(o), nil
	case o.more.whole != nil:
		return kobject.Value(o.more.whole.Object)
	}
	if v := o.more.pending.Swap(nil); v != nil {
		return *v, nil
	}
	return cty.NilVal, errValueGone
}

// release drops a value that will not be emitted (store = "cached").
func (o *object) release() {
	if o.more != nil {
		o.more.pending.Store(nil)
	}
}

// sameAs reports whether p has the same content apart from its
// resourceVersion (a packed value leaves it out).
func (o *object) sameAs(p *object) bool {
	switch {
	case o.failed() != nil || p.failed() != nil || o.projected() != p.projected():
		return false
	case o.projected():
		return o.packed.Same(&p.packed)
	case o.more.whole != nil && p.more.whole != nil:
		return kobject.SameContent(p.more.whole.Object, o.more.whole.Object)
	}
	return o.more.digest == p.more.digest && o.more.whole == nil && p.more.whole == nil
}

// Same implements node.Packed.
func (o *object) Same(p node.Packed) bool {
	q, ok := p.(*object)
	return ok && o.packed.Same(&q.packed)
}

// unstructured returns a copy of the object as Lookup hands it out: the
// whole object, or with a projection what the graph reads and the
// identity.
func (o *object) unstructured() *unstructured.Unstructured {
	if o.more != nil && o.more.whole != nil {
		return o.more.whole.DeepCopy()
	}
	var m map[string]any
	if o.failed() == nil && o.projected() {
		m, _ = ctyconv.FromCty(o.Value()).(map[string]any)
	}
	if m == nil {
		m = map[string]any{}
	}
	u := &unstructured.Unstructured{Object: m}
	for _, f := range []struct {
		v   string
		set func(string)
	}{{o.kind.APIVersion, u.SetAPIVersion}, {o.kind.Kind, u.SetKind}, {o.org.Namespace, u.SetNamespace}, {o.org.Name, u.SetName},
		{o.org.UID, func(s string) { u.SetUID(types.UID(s)) }}, {o.org.ResourceVersion, u.SetResourceVersion}} {
		if f.v != "" {
			f.set(f.v)
		}
	}
	return u
}

func id(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// recordList is a list of record objects, as our lister's List
// returns it (informer.go).
type recordList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []*object // pointers: the cache keeps each item, not the array
}

// DeepCopyObject implements runtime.Object; values are immutable and shared.
func (l *recordList) DeepCopyObject() runtime.Object {
	c := &recordList{TypeMeta: l.TypeMeta, Items: make([]*object, len(l.Items))}
	l.ListMeta.DeepCopyInto(&c.ListMeta)
	for i, it := range l.Items {
		c.Items[i] = it.DeepCopyObject().(*object)
	}
	return c
}

var (
	_ runtime.Object            = (*object)(nil)
	_ metav1.ObjectMetaAccessor = (*object)(nil)
	_ node.Packed               = (*object)(nil)
	_ runtime.Object            = (*recordList)(nil)
)

// interner holds one copy of what the objects of a source share: their
// type and namespace. It keeps at most maxInterned of each (a source
// watching more namespaces keeps the others' copies per object).
type interner struct {
	mu         sync.Mutex
	namespaces map[string]any // boxed once: record values hold the box, objects its string
	kinds      map[metav1.TypeMeta]*metav1.TypeMeta
}

// box returns the one interface value holding namespace ns.
func (in *interner) box(ns string) any {
	in.mu.Lock()
	defer in.mu.Unlock()
	return internIn(&in.namespaces, ns, func(ns string) any { return ns })
}

const maxInterned = 4096

func (in *interner) intern(apiVersion, kind, namespace string) (*metav1.TypeMeta, string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	k := internIn(&in.kinds, metav1.TypeMeta{APIVersion: apiVersion, Kind: kind},
		func(tm metav1.TypeMeta) *metav1.TypeMeta { return &tm })
	return k, internIn(&in.namespaces, namespace, func(ns string) any { return ns }).(string)
}

// internIn returns m's value for k, made by mk and kept while m holds
// fewer than maxInterned.
func internIn[K comparable, V any](m *map[K]V, k K, mk func(K) V) V {
	v, ok := (*m)[k]
	if !ok {
		v = mk(k)
		if *m == nil {
			*m = map[K]V{}
		}
		if len(*m) < maxInterned {
			(*m)[k] = v
		}
	}
	return v
}
