package kubernetes

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pipeline/pipeline/engine/node"
)

// A record's origin is made once per emitted object version from the
// identity the informer cache keeps anyway; its strings share their bytes
// with that identity, so provenance costs one small struct per object.

func metaOrigin(src string, m *metav1.PartialObjectMetadata) *node.Origin {
	return &node.Origin{Source: src, Namespace: m.Namespace, Name: m.Name, UID: string(m.UID), ResourceVersion: m.ResourceVersion}
}

// origin hands out the record object's own origin: the object is never
// changed once cached (a new version is a new object), so neither is it.
func (o *recordObject) origin(src string) *node.Origin {
	if o.org.Source != src {
		org := o.org
		org.Source = src
		return &org
	}
	return &o.org
}
func (o *slimObject) origin(src string) *node.Origin {
	return metaOrigin(src, &o.PartialObjectMetadata)
}

func (m memItem) origin(src string) *node.Origin {
	return &node.Origin{Source: src, Namespace: m.u.GetNamespace(), Name: m.u.GetName(), UID: string(m.u.GetUID()), ResourceVersion: m.u.GetResourceVersion()}
}

// originOf is the origin of an object the event being handled is not
// about (the next object providing a key): the informer cache's identity
// when it has the object, else its namespace and name.
func (w *watcher) originOf(objID string) *node.Origin {
	if obj, ok, err := w.store.GetByKey(objID); err == nil && ok {
		if it, ok := toItem(obj); ok {
			return it.origin(w.src.address)
		}
	}
	ns, name, found := strings.Cut(objID, "/")
	if !found {
		ns, name = "", objID
	}
	return &node.Origin{Source: w.src.address, Namespace: ns, Name: name}
}
