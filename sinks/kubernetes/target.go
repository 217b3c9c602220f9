package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/kubeclient"
)

// Target is the sink's boundary in a cluster: the objects of one kind that
// carry the owner label (in namespaces, when set). Update and Delete run
// their requests concurrently; the engine calls the methods from one
// goroutine.
type Target struct {
	s    *Sink
	env  node.Env
	plan bool
	dyn  dynamic.Interface
	meta metadata.Interface
	disc discovery.DiscoveryInterface
	// mapping is the kind's resource, found through discovery on first
	// use (a CRD may be created after the sink opens).
	mapping *meta.RESTMapping

	mu      sync.Mutex
	results map[node.Key]result
	// owned holds the keys of the objects known to be the sink's (listed
	// as owned by the last Actual, or applied since): their applies need
	// no ownership check. foreign says why an object with a key the sink
	// met is not its own (it carries the label but the sink never wrote
	// it, or it exists unlabelled), for explain.
	owned   map[node.Key]bool
	foreign map[node.Key]string

	// listed holds the entries the last Actual built, by key, with the
	// object's resourceVersion: an object whose resourceVersion did not
	// change since is the same object, and its entry is not built again
	// (a resync over unchanged objects decodes no annotation). Only Actual
	// uses it.
	listed map[node.Key]listedEntry

	rejected  prometheus.Counter
	conflicts prometheus.Counter
}

type listedEntry struct {
	resourceVersion string
	entry           node.Entry
	ok              bool
}

// result is the outcome of the last write of one object, for explain.
type result struct {
	op              string // "apply", "delete"
	at              time.Time
	resourceVersion string
	err             string
	owner           string
}

// Open implements node.Sink. It builds the clients and does no request: the
// kind is resolved on first use, so a cluster that is down at start makes
// the sink degraded (and retried) rather than failed.
func (s *Sink) Open(_ context.Context, env node.Env, mode node.Mode) (node.Target, error) {
	cfg, err := kubeclient.RESTConfig(s.cluster)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.address, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: dynamic client: %w", s.address, err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: discovery client: %w", s.address, err)
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: metadata client: %w", s.address, err)
	}
	t := &Target{s: s, env: env, plan: mode == node.ModePlan, dyn: dyn, meta: md, disc: disc, results: map[node.Key]result{},
		owned: map[node.Key]bool{}, foreign: map[node.Key]string{}}
	t.rejected = prometheus.NewCounter(prometheus.CounterOpts{Name: "pipeline_sink_kubernetes_rejected_total",
		Help: "Objects the API server rejected (invalid, or denied by admission)."})
	t.conflicts = prometheus.NewCounter(prometheus.CounterOpts{Name: "pipeline_sink_kubernetes_conflicts_total",
		Help: "Applies refused because another field manager owns a field with another value."})
	if !t.plan && env.Metrics != nil {
		for _, c := range []prometheus.Collector{t.rejected, t.conflicts} {
			if err := env.Metrics.Register(c); err != nil {
				return nil, fmt.Errorf("register metrics: %w", err)
			}
		}
	}
	return t, nil
}

// resource resolves the kind to its resource with one discovery request,
// of the kind's group version only.
func (t *Target) resource() (*meta.RESTMapping, error) {
	if t.mapping != nil {
		return t.mapping, nil
	}
	gvk := t.s.obj.gvk
	list, err := t.disc.ServerResourcesForGroupVersion(gvk.GroupVersion().String())
	if err != nil {
		return nil, fmt.Errorf("find the resource of %s: %w", gvk, err)
	}
	for _, r := range list.APIResources {
		if r.Kind != gvk.Kind || strings.Contains(r.Name, "/") {
			continue
		}
		scope := meta.RESTScopeRoot
		if r.Namespaced {
			scope = meta.RESTScopeNamespace
		}
		t.mapping = &meta.RESTMapping{Resource: gvk.GroupVersion().WithResource(r.Name), GroupVersionKind: gvk, Scope: scope}
		return t.mapping, nil
	}
	return nil, fmt.Errorf("find the resource of %s: the API server does not serve kind %s in %s", gvk, gvk.Kind, gvk.GroupVersion())
}

// client is the resource client of namespace ns ("" for every namespace
// or a cluster-scoped kind).
func (t *Target) client(m *meta.RESTMapping, ns string) dynamic.ResourceInterface {
	r := t.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return r.Namespace(ns)
	}
	return r
}

// Ready implements node.Readier: the API server answers discovery for
// the kind.
func (t *Target) Ready(ctx context.Context) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := t.resource()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-tick.C:
		}
	}
}

// Prepare implements node.Target: the entry's key is the object's
// namespace/name (name when cluster-scoped), its Data the canonical applied
// configuration.
func (t *Target) Prepare(r node.Record) (node.Entry, error) { return t.s.Prepare(r) }

// Prepare builds r's entry; it is the sink's node.Encoder too.
func (s *Sink) Prepare(r node.Record) (node.Entry, error) {
	b, err := s.build(r)
	if err != nil {
		return node.Entry{}, err
	}
	if s.status {
		b.data, err = json.Marshal(statusOnly(b.obj))
		if err != nil {
			return node.Entry{}, fmt.Errorf("encode object: %w", err)
		}
	}
	return entryOf(b.key, b.data, b.sensitive), nil
}

// Encoder implements node.Encoder: config tests see the objects.
func (s *Sink) Encoder(node.Env) (func(node.Record) (node.Entry, error), error) {
	return s.Prepare, nil
}

// Actual implements node.Target: one LIST per namespace (one in all when
// namespaces is unset) of the objects carrying the owner label, a
// consistent read from the API server's watch cache. Each object shows
// the fields the sink's field manager owns in its managedFields (owned):
// what the sink last applied while nobody changed them, so an object
// edited by hand (its editor now owns the fields it changed) reads as
// another entry and the loop writes it again. Status targets list every
// object and show the status fields the sink's field manager owns.
func (t *Target) Actual(ctx context.Context) ([]node.Entry, error) {
	m, err := t.resource()
	if err != nil {
		return nil, err
	}
	namespaces := t.s.namespaces
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	var out []node.Entry
	listed := make(map[node.Key]listedEntry, len(t.listed))
	owned, foreign := map[node.Key]bool{}, map[node.Key]string{}
	for _, ns := range namespaces {
		// A consistent LIST (no resourceVersion): never older than the
		// sink's own last write, so a resync right after a write neither
		// writes it again nor misses a delete. Kubernetes 1.31 and later
		// serve it from the watch cache (consistent reads from cache).
		opts := metav1.ListOptions{}
		if !t.s.status {
			opts.LabelSelector = t.s.label + "=" + t.s.value
		}
		lctx, cancel := context.WithTimeout(ctx, 4*t.s.timeout)
		list, err := t.client(m, ns).List(lctx, opts)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", m.Resource.Resource, err)
		}
		for i := range list.Items {
			o := &list.Items[i]
			key, rv := keyOf(o.GetNamespace(), o.GetName()), o.GetResourceVersion()
			if !t.s.status && !t.owns(o) {
				// The label copied by hand (or by another tool): not the
				// sink's, so never updated, pruned or shown as its own.
				foreign[key] = t.notOwned(o)
				continue
			}
			owned[key] = true
			l, seen := t.listed[key]
			if !seen || l.resourceVersion != rv || rv == "" {
				l.resourceVersion = rv
				l.entry, l.ok = t.actualEntry(o)
			}
			listed[key] = l
			if l.ok {
				out = append(out, l.entry)
			}
		}
	}
	t.listed = listed
	t.mu.Lock()
	t.owned, t.foreign = owned, foreign
	t.mu.Unlock()
	return out, nil
}

// actualEntry is the entry an object shows; ok is false for an object the
// sink does not hold (being deleted, or no status fields of ours).
func (t *Target) actualEntry(o *unstructured.Unstructured) (node.Entry, bool) {
	if o.GetDeletionTimestamp() != nil {
		return node.Entry{}, false
	}
	key := keyOf(o.GetNamespace(), o.GetName())
	if t.s.status {
		data, ok := ownedStatus(o, t.s.manager)
		if !ok {
			return node.Entry{}, false
		}
		return entryOf(key, data, false), true
	}
	fs := fieldSet(o, t.s.manager, "", metav1.ManagedFieldsOperationApply)
	if fs == nil {
		// The sink's manager holds fields of it through no apply (an
		// update under its name): show what it holds, which the next
		// apply makes the sink's.
		live := o.DeepCopy().Object
		for _, f := range []string{"managedFields", "resourceVersion", "uid", "creationTimestamp", "generation"} {
			unstructured.RemoveNestedField(live, "metadata", f)
		}
		data, _ := json.Marshal(live)
		return entryOf(key, data, false), true
	}
	x := owned(o, fs)
	data, err := json.Marshal(x)
	if err != nil {
		return node.Entry{}, false
	}
	return node.Entry{Key: key, Value: toValue(x, data), Data: data}, true // x is data decoded
}

// Close implements node.Target. The objects stay.
func (t *Target) Close() error {
	if !t.plan && t.env.Metrics != nil {
		t.env.Metrics.Unregister(t.rejected)
		t.env.Metrics.Unregister(t.conflicts)
	}
	return nil
}

func (t *Target) record(key node.Key, r result) {
	t.mu.Lock()
	t.results[key] = r
	t.mu.Unlock()
}

var errPlan = errors.New("target opened for plan: writes refused")

var (
	_ node.Sink    = (*Sink)(nil)
	_ node.Encoder = (*Sink)(nil)
	_ node.Target  = (*Target)(nil)
	_ node.Readier = (*Target)(nil)
)
