package kubernetes

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/pipeline/pipeline/internal/kobject"
)

// objectCache holds objects fetched from the API server for Lookup with
// store = "cached": an access renews an entry's TTL, a change of the
// object drops it, and expired entries are swept.
type objectCache struct {
	ttl   time.Duration
	fetch func(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error)
	prune *kobject.Pruner

	mu      sync.Mutex
	items   map[string]*cachedObject
	gen     uint64       // bumped by every invalidation, so a racing fetch is not stored
	fetches atomic.Int64 // fetches made, for tests
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
