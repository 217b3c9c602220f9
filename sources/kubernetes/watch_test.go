package kubernetes

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/zclconf/go-cty/cty"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

var (
	podsGVR = kschema.GroupVersionResource{Version: "v1", Resource: "pods"}
	podGVK  = kschema.GroupVersionKind{Version: "v1", Kind: "Pod"}
)

// leakOptions ignore what exists before a test (earlier tests' idle
// client connections) and, in the integration build, the API server
// harness's process waiters.
func leakOptions() []goleak.Option {
	return []goleak.Option{goleak.IgnoreCurrent(),
		goleak.IgnoreAnyFunction("github.com/pipeline/pipeline/internal/kubeapitest.(*Server).spawn.func1")}
}

func newPod(name, rv string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec":   map[string]any{"nodeName": "n1"},
		"status": map[string]any{"podIP": "10.0.0.1"},
	}}
	u.SetGroupVersionKind(podGVK)
	u.SetNamespace("shop")
	u.SetName(name)
	u.SetResourceVersion(rv)
	u.SetLabels(labels)
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "test", Operation: metav1.ManagedFieldsOperationUpdate}})
	return u
}

// fakeRun is a watch over a fake dynamic client; tests defer stop (before
// goleak's check). The fake ignores label
// selectors on watches and does not set resourceVersions; tests set them.
type fakeRun struct {
	src    *Source
	client *dynfake.FakeDynamicClient
	out    *nodetest.Output
	health *nodetest.HealthRecorder
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	// watching is closed once the informer's first watch is registered
	// with the fake: a change made before that would be lost (the fake
	// replays nothing), so pods waits for it.
	watching chan struct{}
}

func startFake(t *testing.T, s *Source, out *nodetest.Output, objs ...runtime.Object) *fakeRun {
	t.Helper()
	client := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[kschema.GroupVersionResource]string{podsGVR: "PodList"}, objs...)
	return startWith(t, s, out, client)
}

func startWith(t *testing.T, s *Source, out *nodetest.Output, client *dynfake.FakeDynamicClient) *fakeRun {
	reg := prometheus.NewRegistry()
	env, health := nodetest.Env(t, reg)
	m, err := newMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	mon := newMonitor(env.Health, env.Logger, m, s.opts.disconnectAfter)
	ctx, cancel := context.WithCancel(context.Background())
	r := &fakeRun{src: s, client: client, out: out, health: health, reg: reg, cancel: cancel, done: make(chan error, 1),
		watching: make(chan struct{})}
	var watched sync.Once
	client.PrependWatchReactor("*", func(a clienttesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if wa, ok := a.(clienttesting.WatchActionImpl); ok {
			opts = wa.ListOptions
		}
		w, err := client.Tracker().Watch(a.GetResource(), a.GetNamespace(), opts)
		if err != nil {
			return false, nil, err
		}
		watched.Do(func() { close(r.watching) })
		return true, w, nil
	})
	res := resolved{gvr: podsGVR, gvk: podGVK, namespaced: true}
	go func() { r.done <- s.watch(ctx, env, out, mon, m, clients{dynamic: client}, res, nil) }()
	return r
}

func (r *fakeRun) stop(t *testing.T) {
	r.once.Do(func() {
		r.cancel()
		if err := <-r.done; err != nil {
			t.Errorf("watch returned %v", err)
		}
	})
}

func (r *fakeRun) pods() interface {
	Create(context.Context, *unstructured.Unstructured, metav1.CreateOptions, ...string) (*unstructured.Unstructured, error)
	Update(context.Context, *unstructured.Unstructured, metav1.UpdateOptions, ...string) (*unstructured.Unstructured, error)
	Delete(context.Context, string, metav1.DeleteOptions, ...string) error
} {
	select {
	case <-r.watching:
	case <-time.After(10 * time.Second): // the test's own wait reports what is missing
	}
	return r.client.Resource(podsGVR).Namespace("shop")
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func hasKey(out *nodetest.Output, key string) func() bool {
	return func() bool { _, ok := out.State()[key]; return ok }
}

func attr(v cty.Value, path ...string) cty.Value {
	for _, p := range path {
		if v.IsNull() || !v.Type().IsObjectType() || !v.Type().HasAttribute(p) {
			return cty.NilVal
		}
		v = v.GetAttr(p)
	}
	return v
}

func batchKeys(batches [][]node.Delta) [][]string {
	var out [][]string
	for _, b := range batches {
		var keys []string
		for _, d := range b {
			k := d.Key
			if d.Delete {
				k = "-" + k
			}
			keys = append(keys, k)
		}
		out = append(out, keys)
	}
	return out
}

func TestWatchSyncAndEvents(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	s := mustBuild(t, "", "resource = \"pods\"\nignore_fields = [\"{.metadata.managedFields}\"]")
	r := startFake(t, s, nodetest.NewOutput(), newPod("a", "1", nil), newPod("b", "1", nil))
	defer r.stop(t)
	waitFor(t, "sync", r.out.Synced)
	if diff := cmp.Diff([][]string{{"shop/a", "shop/b"}}, batchKeys(r.out.Batches())); diff != "" {
		t.Fatalf("initial state must be one batch (-want +got)\n%s", diff)
	}
	if v := attr(r.out.State()["shop/a"], "metadata", "managedFields"); v != cty.NilVal {
		t.Errorf("managedFields not ignored: %#v", v)
	}
	ctx := context.Background()
	if _, err := r.pods().Create(ctx, newPod("c", "2", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "shop/c", hasKey(r.out, "shop/c"))
	// Only managedFields (ignored) and resourceVersion change: nothing is emitted.
	a := newPod("a", "3", nil)
	a.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "other"}})
	if _, err := r.pods().Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := newPod("b", "4", map[string]string{"tier": "db"})
	if _, err := r.pods().Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b's label", func() bool { return attr(r.out.State()["shop/b"], "metadata", "labels") != cty.NilVal })
	if err := r.pods().Delete(ctx, "c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "delete of shop/c", func() bool { return !hasKey(r.out, "shop/c")() })
	want := [][]string{{"shop/a", "shop/b"}, {"shop/c"}, {"shop/b"}, {"-shop/c"}}
	if diff := cmp.Diff(want, batchKeys(r.out.Batches())); diff != "" {
		t.Errorf("batches (-want +got)\n%s", diff)
	}
	for typ, n := range map[string]float64{"add": 3, "update": 2, "delete": 1} {
		if got := testutil.ToFloat64(s.current.m.events.WithLabelValues(typ)); got != n {
			t.Errorf("events{%s} = %v, want %v", typ, got, n)
		}
	}
	// The gauge is set after the delete is published.
	waitFor(t, "objects = 2", func() bool { return testutil.ToFloat64(s.current.m.Objects) == 2 })
	obj, ok, err := s.Lookup(ctx, "shop/b")
	if err != nil || !ok || obj.GetLabels()["tier"] != "db" || obj.GetManagedFields() != nil {
		t.Errorf("Lookup(shop/b) = %v, %v, %v", obj, ok, err)
	}
	if _, ok, err := s.Lookup(ctx, "shop/c"); ok || err != nil {
		t.Errorf("Lookup(shop/c) = %v, %v", ok, err)
	}
	if diff := cmp.Diff([]node.State{node.Pending, node.Healthy}, r.health.States()); diff != "" {
		t.Errorf("health (-want +got)\n%s", diff)
	}
	r.stop(t)
	if _, _, err := s.Lookup(ctx, "shop/a"); err == nil {
		t.Error("Lookup after stop succeeded")
	}
}

func TestWatchIndexBy(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	s := mustBuild(t, "", "resource = \"pods\"\nindex_by = [\"{.metadata.labels.app}\"]")
	web := map[string]string{"app": "web"}
	r := startFake(t, s, nodetest.NewOutput(), newPod("b", "1", web), newPod("a", "1", web), newPod("c", "1", nil))
	defer r.stop(t)
	waitFor(t, "sync", r.out.Synced)
	name := func(key string) string {
		v := attr(r.out.State()[key], "metadata", "name")
		if v == cty.NilVal {
			return ""
		}
		return v.AsString()
	}
	if diff := cmp.Diff([]string{"web"}, r.out.Keys()); diff != "" {
		t.Fatalf("keys (-want +got)\n%s", diff)
	}
	if name("web") != "a" {
		t.Errorf("web is provided by %q, want the smallest name a", name("web"))
	}
	skipped := func(reason string) float64 { return testutil.ToFloat64(s.current.m.Skipped.WithLabelValues(reason)) }
	if skipped("index_missing") != 1 || skipped("duplicate_key") != 1 {
		t.Errorf("skipped: missing %v duplicate %v", skipped("index_missing"), skipped("duplicate_key"))
	}
	ctx := context.Background()
	if obj, ok, _ := s.Lookup(ctx, "web"); !ok || obj.GetName() != "a" {
		t.Errorf("Lookup(web) = %v, %v", obj, ok)
	}
	if err := r.pods().Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b to provide web", func() bool { return name("web") == "b" })
	if _, err := r.pods().Update(ctx, newPod("c", "2", map[string]string{"app": "db"}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "db", hasKey(r.out, "db"))
	if _, err := r.pods().Update(ctx, newPod("b", "3", map[string]string{"app": "api"}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "api", hasKey(r.out, "api"))
	if diff := cmp.Diff([]string{"api", "db"}, r.out.Keys()); diff != "" {
		t.Errorf("keys (-want +got)\n%s", diff)
	}
	if got := testutil.ToFloat64(s.current.m.Objects); got != 2 {
		t.Errorf("objects = %v, want 2", got)
	}
}

func TestWatchCachedStore(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	s := mustBuild(t, "", "resource = \"pods\"\nstore = \"cached\"\nignore_fields = [\"{.metadata.managedFields}\"]")
	r := startFake(t, s, nodetest.NewOutput(), newPod("a", "1", nil))
	defer r.stop(t)
	waitFor(t, "sync", r.out.Synced)
	if v := attr(r.out.State()["shop/a"], "status", "podIP"); v != cty.StringVal("10.0.0.1") {
		t.Errorf("emitted value is not the whole object: podIP %#v", v)
	}
	w := s.current
	for _, obj := range w.store.List() {
		slim, ok := obj.(*object)
		if !ok || slim.more == nil || slim.more.pending.Load() != nil {
			t.Fatalf("cache holds %T (pending value kept: %v)", obj, ok && slim.more != nil && slim.more.pending.Load() != nil)
		}
	}
	ctx := context.Background()
	for range 2 {
		obj, ok, err := s.Lookup(ctx, "shop/a")
		if err != nil || !ok || obj.GetManagedFields() != nil || obj.Object["status"] == nil {
			t.Fatalf("Lookup = %v, %v, %v", obj, ok, err)
		}
	}
	if n := w.cache.fetches.Load(); n != 1 {
		t.Errorf("%d fetches for two lookups within the TTL, want 1", n)
	}
	if _, err := r.pods().Update(ctx, newPod("a", "2", map[string]string{"x": "y"}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "update", func() bool { return attr(r.out.State()["shop/a"], "metadata", "labels") != cty.NilVal })
	if obj, _, _ := s.Lookup(ctx, "shop/a"); obj.GetLabels()["x"] != "y" || w.cache.fetches.Load() != 2 {
		t.Errorf("after an update: labels %v, fetches %d (want a new fetch)", obj.GetLabels(), w.cache.fetches.Load())
	}
}

func TestWatchSyncChanges(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	s := mustBuild(t, "", "resource = \"pods\"\ncall_on_change_during_sync = true")
	r := startFake(t, s, nodetest.NewOutput(), newPod("a", "1", nil), newPod("b", "1", nil))
	defer r.stop(t)
	waitFor(t, "sync", r.out.Synced)
	if diff := cmp.Diff([][]string{{"shop/a"}, {"shop/b"}}, batchKeys(r.out.Batches())); diff != "" {
		t.Errorf("with call_on_change_during_sync each object is a batch (-want +got)\n%s", diff)
	}
}

// A new run (the engine restarting the source) converges its output with
// one difference: no churn for unchanged objects, deletes for gone ones.
func TestWatchRestartConverges(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	s := mustBuild(t, "", `resource = "pods"`)
	out := nodetest.NewOutput()
	r := startFake(t, s, out, newPod("a", "1", nil), newPod("b", "1", nil))
	defer r.stop(t)
	waitFor(t, "sync", out.Synced)
	r.stop(t)
	r = startFake(t, s, out, newPod("a", "1", nil), newPod("c", "1", nil))
	defer r.stop(t)
	waitFor(t, "shop/c", hasKey(out, "shop/c"))
	batches := batchKeys(out.Batches())
	if diff := cmp.Diff([]string{"shop/c", "-shop/b"}, batches[len(batches)-1]); diff != "" {
		t.Errorf("restart batch (-want +got)\n%s", diff)
	}
	r.stop(t)
}
