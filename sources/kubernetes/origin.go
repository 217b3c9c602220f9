package kubernetes

import (
	"k8s.io/client-go/tools/cache"

	"github.com/pipeline/pipeline/engine/node"
)

// A record's origin is made once per emitted object version from the
// identity the informer cache keeps anyway; its strings share their bytes
// with that identity, so provenance costs one small struct per object.

// origin hands out the object's own origin: the object is never
// changed once cached (a new version is a new object), so neither is it.
func (o *object) origin(src string) *node.Origin {
	if o.org.Source != src {
		org := o.org
		org.Source = src
		return &org
	}
	return &o.org
}

// originOf is the origin of an object the event being handled is not
// about (the next object providing a key): the informer cache's identity
// when it has the object, else its namespace and name.
func (w *watcher) originOf(objID string) *node.Origin {
	if o := w.cached(objID); o != nil {
		return o.origin(w.src.address)
	}
	ns, name, _ := cache.SplitMetaNamespaceKey(objID)
	return &node.Origin{Source: w.src.address, Namespace: ns, Name: name}
}
