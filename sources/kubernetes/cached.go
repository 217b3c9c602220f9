package kubernetes

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zclconf/go-cty/cty"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/pipeline/pipeline/internal/kobject"
)

// slimObject is what the informer cache holds with store = "cached": the
// object's identity, its record key and a digest of its content (to tell
// real changes from resourceVersion-only ones). The full record value rides
// along from the transform to the event handler, which emits it and drops
// it, so the cache retains only names and keys.
type slimObject struct {
	metav1.PartialObjectMetadata
	recordKey string
	keyErr    error
	digest    [sha256.Size]byte
	pending   atomic.Pointer[cty.Value]
}

var errValueGone = errors.New("value already emitted")

// newSlim makes the slim form of u. The value rides along only when it
// will be emitted: a relist delivers unchanged objects (same
// resourceVersion) to no handler, so their value would stay in the cache.
func newSlim(u *unstructured.Unstructured, keyer *kobject.Keyer, withValue bool) *slimObject {
	o := &slimObject{PartialObjectMetadata: identity(u)}
	o.recordKey, o.keyErr = keyer.Key(u.Object)
	if withValue {
		if v, err := kobject.Value(u.Object); err == nil {
			o.pending.Store(&v)
		}
	}
	o.digest = digest(u.Object)
	return o
}

// identity is what the informer cache keeps of an object's metadata: its
// type, name, namespace, uid and resourceVersion.
func identity(u *unstructured.Unstructured) metav1.PartialObjectMetadata {
	var m metav1.PartialObjectMetadata
	m.TypeMeta = metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()}
	m.Name, m.Namespace, m.UID, m.ResourceVersion = u.GetName(), u.GetNamespace(), u.GetUID(), u.GetResourceVersion()
	return m
}

func digest(obj map[string]any) [sha256.Size]byte {
	b, err := json.Marshal(kobject.WithoutResourceVersion(obj))
	if err != nil {
		return [sha256.Size]byte{}
	}
	return sha256.Sum256(b)
}

// DeepCopyObject implements runtime.Object.
func (o *slimObject) DeepCopyObject() runtime.Object {
	c := &slimObject{recordKey: o.recordKey, keyErr: o.keyErr, digest: o.digest}
	o.PartialObjectMetadata.DeepCopyInto(&c.PartialObjectMetadata)
	if v := o.pending.Load(); v != nil {
		c.pending.Store(v)
	}
	return c
}

func (o *slimObject) id() string { return id(o.Namespace, o.Name) }

func (o *slimObject) key(*kobject.Keyer) (string, error) { return o.recordKey, o.keyErr }

func (o *slimObject) value() (cty.Value, error) {
	v := o.pending.Swap(nil)
	if v == nil {
		return cty.NilVal, errValueGone
	}
	return *v, nil
}

func (o *slimObject) release() { o.pending.Store(nil) }

func (o *slimObject) sameAs(old any) bool {
	p, ok := old.(*slimObject)
	return ok && p.digest == o.digest
}

func id(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// objectCache holds objects fetched from the API server for Lookup with
// store = "cached": an access renews an entry's TTL, a change of the
// object drops it, and expired entries are swept.
type objectCache struct {
	ttl   time.Duration
	fetch func(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error)
	prune *kobject.Pruner

	mu      sync.Mutex
	items   map[string]*cachedObject
	gen     uint64 // bumped by every invalidation, so a racing fetch is not stored
	fetches atomic.Int64
}

type cachedObject struct {
	obj     *unstructured.Unstructured
	expires time.Time
}

func newObjectCache(ttl time.Duration, prune *kobject.Pruner,
	fetch func(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error)) *objectCache {
	return &objectCache{ttl: ttl, fetch: fetch, prune: prune, items: map[string]*cachedObject{}}
}

// get returns a copy of the object with the given id, from the cache or
// fetched from the API server.
func (c *objectCache) get(ctx context.Context, objID string) (*unstructured.Unstructured, error) {
	now := time.Now()
	c.mu.Lock()
	if it, ok := c.items[objID]; ok && now.Before(it.expires) {
		it.expires = now.Add(c.ttl)
		obj := it.obj
		c.mu.Unlock()
		return obj.DeepCopy(), nil
	}
	gen := c.gen
	c.mu.Unlock()
	ns, name, err := cache.SplitMetaNamespaceKey(objID)
	if err != nil {
		return nil, err
	}
	c.fetches.Add(1)
	obj, err := c.fetch(ctx, ns, name)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", objID, err)
	}
	c.prune.Prune(obj.Object)
	c.mu.Lock()
	if c.gen == gen {
		c.items[objID] = &cachedObject{obj: obj, expires: time.Now().Add(c.ttl)}
	}
	c.mu.Unlock()
	return obj.DeepCopy(), nil
}

func (c *objectCache) invalidate(objID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.items, objID)
}

func (c *objectCache) sweep(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, it := range c.items {
		if !now.Before(it.expires) {
			delete(c.items, k)
		}
	}
}

func (c *objectCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}

var (
	_ runtime.Object = (*slimObject)(nil)
	_ item           = (*slimObject)(nil)
)
