package kubernetes

import (
	"github.com/zclconf/go-cty/cty"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/ctyconv"
	"github.com/pipeline/pipeline/internal/kobject"
)

// recordObject is what the informer cache holds when the source decodes a
// projection: the object's identity, its record key and its record value
// in packed form (packed.go), which is the very form the source's
// collection keeps: the cache and the collection share one immutable
// packed value instead of each holding a copy of the object, and the cty
// value is built only for the consumers that receive it. The identity
// lives in the record's origin, which the object hands out by reference
// (origin.go), so provenance costs nothing more per object; informers
// reach it through GetObjectMeta.
type recordObject struct {
	metav1.TypeMeta
	org       node.Origin // Source, Namespace, Name, UID, ResourceVersion, Object (the record key)
	recordKey string
	keyErr    error
	val       cty.Value // node.PackedVal of the packed value (packed.go)
	valErr    error
}

// newRecordObject makes the cached form of a projected object of source
// src. The record value holds only what the graph reads (sh): not the
// identity fields the source decodes for itself (apiVersion, kind, name,
// namespace, uid, resourceVersion) unless an expression reads them, so
// that a write changing nothing the graph reads yields an equal value.
func newRecordObject(u *unstructured.Unstructured, src string, keyer *kobject.Keyer, sh *shape) *recordObject {
	o := &recordObject{TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()},
		org: node.Origin{Source: src, Namespace: u.GetNamespace(), Name: u.GetName(), UID: string(u.GetUID()), ResourceVersion: u.GetResourceVersion()}}
	o.recordKey, o.keyErr = keyer.Key(u.Object)
	o.org.Object = o.recordKey
	var p *packed
	if p, o.valErr = sh.pack(u.Object); o.valErr == nil {
		o.val = node.PackedVal(p)
	}
	return o
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

func (o *recordObject) id() string                         { return id(o.org.Namespace, o.org.Name) }
func (o *recordObject) key(*kobject.Keyer) (string, error) { return o.recordKey, o.keyErr }
func (o *recordObject) value() (cty.Value, error)          { return o.val, o.valErr }
func (o *recordObject) release()                           {}
func (o *recordObject) unstructured() *unstructured.Unstructured {
	var m map[string]any
	if o.valErr == nil {
		m, _ = ctyconv.FromCty(node.Unpack(o.val)).(map[string]any)
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
	}{{o.APIVersion, u.SetAPIVersion}, {o.Kind, u.SetKind}, {o.org.Namespace, u.SetNamespace}, {o.org.Name, u.SetName},
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
	return ok && o.valErr == nil && p.valErr == nil && o.val.RawEquals(p.val)
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
	_ runtime.Object            = (*recordList)(nil)
)
