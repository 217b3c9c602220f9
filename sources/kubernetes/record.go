package kubernetes

import (
	"errors"
	"sync"

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

// recordObject is what the informer cache holds when the source decodes a
// projection: the object's identity, its record key and its record value
// in packed form (packed.go), which the object is itself (node.Packed):
// the source's collection keeps the very object the cache holds, and the
// cty value is built only for the consumers that receive it. The identity
// lives in the record's origin, which the object hands out by reference
// (origin.go), so provenance costs nothing more per object; informers
// reach it through GetObjectMeta. Strings many objects share (namespace,
// apiVersion and kind) are held once (interner), and the object's id is
// its record key when the key is namespace/name.
type recordObject struct {
	kind  *metav1.TypeMeta // shared by the objects of one type (interner)
	org   node.Origin      // Source, Namespace, Name, UID, ResourceVersion, Object (the record key)
	objID string           // namespace/name, the informer's key
	err   error            // the key's (wrapping kobject.ErrMissing) or the value's
	packed
}

// newRecordObject makes the cached form of a projected object of source
// src. The record value holds only what the graph reads (sh): not the
// identity fields the source decodes for itself (apiVersion, kind, name,
// namespace, uid, resourceVersion) unless an expression reads them, so
// that a write changing nothing the graph reads yields an equal value.
func newRecordObject(u *unstructured.Unstructured, src string, keyer *kobject.Keyer, sh *shape, in *interner) *recordObject {
	o := &recordObject{kind: in.kind(u.GetAPIVersion(), u.GetKind()),
		org: node.Origin{Source: src, Namespace: in.str(u.GetNamespace()), Name: u.GetName(), UID: string(u.GetUID()), ResourceVersion: u.GetResourceVersion()}}
	o.objID = id(o.org.Namespace, o.org.Name)
	if key, err := keyer.Key(u.Object); err != nil {
		o.err = err
	} else if key == o.objID {
		o.org.Object = o.objID // one string for both
	} else {
		o.org.Object = key
	}
	o.packed.sh, o.packed.slots = sh, make([]cty.Value, sh.slots)
	if err := sh.fill(u.Object, o.slots); err != nil && o.err == nil {
		o.err = err
	}
	return o
}

// GetObjectKind implements runtime.Object with a copy: the type is shared.
func (o *recordObject) GetObjectKind() schema.ObjectKind {
	if o.kind == nil { // the informer's example object
		return schema.EmptyObjectKind
	}
	k := *o.kind
	return &k
}

// DeepCopyObject implements runtime.Object; the value is immutable and shared.
func (o *recordObject) DeepCopyObject() runtime.Object {
	c := *o
	return &c
}

// GetObjectMeta implements metav1.ObjectMetaAccessor (meta.Accessor): the
// informer's keys and the reflector's resourceVersion come from it.
func (o *recordObject) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: o.org.Namespace, Name: o.org.Name, UID: types.UID(o.org.UID), ResourceVersion: o.org.ResourceVersion}
}

func (o *recordObject) id() string { return o.objID }
func (o *recordObject) key(*kobject.Keyer) (string, error) {
	if errors.Is(o.err, kobject.ErrMissing) {
		return "", o.err
	}
	return o.org.Object, nil
}
func (o *recordObject) value() (cty.Value, error) {
	if o.err != nil {
		return cty.NilVal, o.err
	}
	return node.PackedVal(o), nil
}
func (o *recordObject) release() {}

// Same implements node.Packed.
func (o *recordObject) Same(p node.Packed) bool {
	q, ok := p.(*recordObject)
	return ok && o.packed.Same(&q.packed)
}

func (o *recordObject) unstructured() *unstructured.Unstructured {
	var m map[string]any
	if o.err == nil {
		m, _ = ctyconv.FromCty(o.Value()).(map[string]any)
	}
	if m == nil {
		m = map[string]any{}
	}
	// The value holds what the graph reads; the identity comes back from
	// the cached metadata.
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

// sameAs compares record values, which leave out the resourceVersion.
func (o *recordObject) sameAs(old any) bool {
	p, ok := old.(*recordObject)
	return ok && o.err == nil && p.err == nil && o.packed.Same(&p.packed)
}

// recordList is a list of record objects, as the record informer's list
// returns it (informer.go).
type recordList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []*recordObject // pointers: the cache keeps each item, not the array
}

// DeepCopyObject implements runtime.Object; values are immutable and shared.
func (l *recordList) DeepCopyObject() runtime.Object {
	c := &recordList{TypeMeta: l.TypeMeta, Items: make([]*recordObject, len(l.Items))}
	l.ListMeta.DeepCopyInto(&c.ListMeta)
	for i, it := range l.Items {
		c.Items[i] = it.DeepCopyObject().(*recordObject)
	}
	return c
}

var (
	_ item                      = (*recordObject)(nil)
	_ runtime.Object            = (*recordObject)(nil)
	_ metav1.ObjectMetaAccessor = (*recordObject)(nil)
	_ node.Packed               = (*recordObject)(nil)
	_ runtime.Object            = (*recordList)(nil)
)

// interner holds one copy of the strings many objects of a source share
// (namespaces) and of their type, so that the cache keeps each once. It
// stops taking new strings at maxInterned (a source watching that many
// namespaces keeps their copies per object, as without it).
type interner struct {
	mu    sync.Mutex
	strs  map[string]string
	kinds []*metav1.TypeMeta
}

const maxInterned = 4096

func (in *interner) str(s string) string {
	in.mu.Lock()
	defer in.mu.Unlock()
	if c, ok := in.strs[s]; ok {
		return c
	}
	if in.strs == nil {
		in.strs = map[string]string{}
	}
	if len(in.strs) < maxInterned {
		in.strs[s] = s
	}
	return s
}

func (in *interner) kind(apiVersion, kind string) *metav1.TypeMeta {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, k := range in.kinds {
		if k.APIVersion == apiVersion && k.Kind == kind {
			return k
		}
	}
	k := &metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
	if len(in.kinds) < maxInterned {
		in.kinds = append(in.kinds, k)
	}
	return k
}
