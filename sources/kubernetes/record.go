package kubernetes

import (
	"github.com/zclconf/go-cty/cty"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/pipeline/pipeline/internal/ctyconv"
	"github.com/pipeline/pipeline/internal/kobject"
)

// recordObject is what the informer cache holds when the source decodes a
// projection: the object's identity, its record key and its record value,
// which is the very value emitted downstream. The cache and the
// collections share that one immutable value instead of each holding a
// copy of the object.
type recordObject struct {
	metav1.PartialObjectMetadata
	recordKey string
	keyErr    error
	val       cty.Value
	valErr    error
}

// newRecordObject makes the cached form of a projected object. The record
// value leaves out metadata.resourceVersion unless the graph reads it, so
// that a write changing nothing the graph reads yields an equal value.
func newRecordObject(u *unstructured.Unstructured, keyer *kobject.Keyer, keepRV bool) *recordObject {
	o := &recordObject{PartialObjectMetadata: identity(u)}
	o.recordKey, o.keyErr = keyer.Key(u.Object)
	obj := u.Object
	if !keepRV {
		obj = kobject.WithoutResourceVersion(obj)
	}
	o.val, o.valErr = kobject.Value(obj)
	return o
}

// DeepCopyObject implements runtime.Object; the value is immutable and shared.
func (o *recordObject) DeepCopyObject() runtime.Object {
	c := &recordObject{recordKey: o.recordKey, keyErr: o.keyErr, val: o.val, valErr: o.valErr}
	o.PartialObjectMetadata.DeepCopyInto(&c.PartialObjectMetadata)
	return c
}

func (o *recordObject) id() string                         { return id(o.Namespace, o.Name) }
func (o *recordObject) key(*kobject.Keyer) (string, error) { return o.recordKey, o.keyErr }
func (o *recordObject) value() (cty.Value, error)          { return o.val, o.valErr }
func (o *recordObject) release()                           {}
func (o *recordObject) unstructured() *unstructured.Unstructured {
	m, _ := ctyconv.FromCty(o.val).(map[string]any)
	return &unstructured.Unstructured{Object: m}
}

// sameAs compares record values, which leave out the resourceVersion.
func (o *recordObject) sameAs(old any) bool {
	p, ok := old.(*recordObject)
	return ok && o.valErr == nil && p.valErr == nil && o.val.RawEquals(p.val)
}

var (
	_ item           = (*recordObject)(nil)
	_ runtime.Object = (*recordObject)(nil)
)
