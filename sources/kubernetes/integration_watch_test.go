//go:build integration

package kubernetes

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/zclconf/go-cty/cty"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"

	"github.com/pipeline/pipeline/engine/node"
)

// The watcher's bookkeeping (batches, index_by, the cached store, restarts)
// on the test API server.

func TestWatchSyncAndEvents(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	k := newKube(t)
	defer k.close()
	ns := k.ns
	k.pod(t, ns, "a", nil)
	k.pod(t, ns, "b", nil)
	l := start(t, fmt.Sprintf("resource = \"pods\"\nnamespace = %q\n"+
		"ignore_fields = [\"{.metadata.managedFields}\", \"{.metadata.annotations}\"]", ns))
	defer l.stop()
	l.synced(t)
	if diff := cmp.Diff([][]string{{ns + "/a", ns + "/b"}}, batchKeys(l.out.Batches())); diff != "" {
		t.Fatalf("initial state must be one batch (-want +got)\n%s", diff)
	}
	if v := attr(l.out.State()[ns+"/a"], "metadata", "managedFields"); v != cty.NilVal {
		t.Errorf("managedFields not ignored: %#v", v)
	}
	k.pod(t, ns, "c", nil)
	waitFor(t, ns+"/c", hasKey(l.out, ns+"/c"))
	// Only ignored fields and resourceVersion change: nothing is emitted.
	k.update(t, ns, "a", func(p *corev1.Pod) { p.Annotations = map[string]string{"x": "y"} })
	k.relabel(t, ns, "b", map[string]string{"tier": "db"})
	waitFor(t, "b's label", func() bool { return attr(l.out.State()[ns+"/b"], "metadata", "labels") != cty.NilVal })
	k.deletePod(t, ns, "c")
	waitFor(t, "delete of c", func() bool { return !hasKey(l.out, ns+"/c")() })
	// A delete first sets the pod's deletionTimestamp (an update of c),
	// then removes it.
	want := [][]string{{ns + "/a", ns + "/b"}, {ns + "/c"}, {ns + "/b"}, {ns + "/c"}, {"-" + ns + "/c"}}
	if diff := cmp.Diff(want, batchKeys(l.out.Batches())); diff != "" {
		t.Errorf("batches (-want +got)\n%s", diff)
	}
	w := l.src.current
	for typ, n := range map[string]float64{"add": 3, "update": 3, "delete": 1} {
		if got := testutil.ToFloat64(w.m.events.WithLabelValues(typ)); got != n {
			t.Errorf("events{%s} = %v, want %v", typ, got, n)
		}
	}
	// The gauge is set after the change is published.
	waitFor(t, "objects = 2", func() bool { return testutil.ToFloat64(w.m.Objects) == 2 })
	ctx := context.Background()
	obj, ok, err := l.src.Lookup(ctx, ns+"/b")
	if err != nil || !ok || obj.GetLabels()["tier"] != "db" || obj.GetManagedFields() != nil {
		t.Errorf("Lookup(b) = %v, %v, %v", obj, ok, err)
	}
	if _, ok, err := l.src.Lookup(ctx, ns+"/c"); ok || err != nil {
		t.Errorf("Lookup(c) = %v, %v", ok, err)
	}
	if diff := cmp.Diff([]node.State{node.Pending, node.Healthy}, l.health.States()); diff != "" {
		t.Errorf("health (-want +got)\n%s", diff)
	}
	if err := l.stop(); err != nil {
		t.Errorf("Run = %v", err)
	}
	if _, _, err := l.src.Lookup(ctx, ns+"/a"); err == nil {
		t.Error("Lookup after stop succeeded")
	}
}

func TestWatchIndexBy(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	k := newKube(t)
	defer k.close()
	ns := k.ns
	web := map[string]string{"app": "web"}
	k.pod(t, ns, "b", web)
	k.pod(t, ns, "a", web)
	k.pod(t, ns, "c", nil)
	l := start(t, fmt.Sprintf("resource = \"pods\"\nnamespace = %q\nindex_by = [\"{.metadata.labels.app}\"]", ns))
	defer l.stop()
	l.synced(t)
	name := func(key string) string {
		v := attr(l.out.State()[key], "metadata", "name")
		if v == cty.NilVal {
			return ""
		}
		return v.AsString()
	}
	if diff := cmp.Diff([]string{"web"}, l.keys()); diff != "" {
		t.Fatalf("keys (-want +got)\n%s", diff)
	}
	if name("web") != "a" {
		t.Errorf("web is provided by %q, want the smallest name a", name("web"))
	}
	w := l.src.current
	skipped := func(reason string) float64 { return testutil.ToFloat64(w.m.Skipped.WithLabelValues(reason)) }
	if skipped("index_missing") != 1 || skipped("duplicate_key") != 1 {
		t.Errorf("skipped: missing %v duplicate %v", skipped("index_missing"), skipped("duplicate_key"))
	}
	ctx := context.Background()
	if obj, ok, _ := l.src.Lookup(ctx, "web"); !ok || obj.GetName() != "a" {
		t.Errorf("Lookup(web) = %v, %v", obj, ok)
	}
	k.deletePod(t, ns, "a")
	waitFor(t, "b to provide web", func() bool { return name("web") == "b" })
	k.relabel(t, ns, "c", map[string]string{"app": "db"})
	waitFor(t, "db", hasKey(l.out, "db"))
	k.relabel(t, ns, "b", map[string]string{"app": "api"})
	waitFor(t, "api", hasKey(l.out, "api"))
	if diff := cmp.Diff([]string{"api", "db"}, l.keys()); diff != "" {
		t.Errorf("keys (-want +got)\n%s", diff)
	}
	// The gauge is set after the change is published.
	waitFor(t, "objects = 2", func() bool { return testutil.ToFloat64(w.m.Objects) == 2 })
}

func TestWatchCachedStore(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	k := newKube(t)
	defer k.close()
	ns := k.ns
	k.pod(t, ns, "a", nil)
	l := start(t, fmt.Sprintf("resource = \"pods\"\nnamespace = %q\nstore = \"cached\"\nignore_fields = [\"{.metadata.managedFields}\"]", ns))
	defer l.stop()
	l.synced(t)
	if v := attr(l.out.State()[ns+"/a"], "spec", "containers"); v == cty.NilVal {
		t.Errorf("emitted value is not the whole object: no spec.containers")
	}
	w := l.src.current
	for _, obj := range w.store.List() {
		slim, ok := obj.(*object)
		if !ok || slim.more == nil || slim.more.pending.Load() != nil {
			t.Fatalf("cache holds %T (pending value kept: %v)", obj, ok && slim.more != nil && slim.more.pending.Load() != nil)
		}
	}
	ctx := context.Background()
	for range 2 {
		obj, ok, err := l.src.Lookup(ctx, ns+"/a")
		if err != nil || !ok || obj.GetManagedFields() != nil || obj.Object["spec"] == nil {
			t.Fatalf("Lookup = %v, %v, %v", obj, ok, err)
		}
	}
	if n := w.cache.fetches.Load(); n != 1 {
		t.Errorf("%d fetches for two lookups within the TTL, want 1", n)
	}
	k.relabel(t, ns, "a", map[string]string{"x": "y"})
	waitFor(t, "update", func() bool { return attr(l.out.State()[ns+"/a"], "metadata", "labels") != cty.NilVal })
	if obj, _, _ := l.src.Lookup(ctx, ns+"/a"); obj.GetLabels()["x"] != "y" || w.cache.fetches.Load() != 2 {
		t.Errorf("after an update: labels %v, fetches %d (want a new fetch)", obj.GetLabels(), w.cache.fetches.Load())
	}
}

func TestWatchSyncChanges(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	k := newKube(t)
	defer k.close()
	ns := k.ns
	k.pod(t, ns, "a", nil)
	k.pod(t, ns, "b", nil)
	l := start(t, fmt.Sprintf("resource = \"pods\"\nnamespace = %q\ncall_on_change_during_sync = true", ns))
	defer l.stop()
	l.synced(t)
	if diff := cmp.Diff([][]string{{ns + "/a"}, {ns + "/b"}}, batchKeys(l.out.Batches())); diff != "" {
		t.Errorf("with call_on_change_during_sync each object is a batch (-want +got)\n%s", diff)
	}
}

// A new run (the engine restarting the source) converges its output with
// one difference: no churn for unchanged objects, deletes for gone ones.
func TestWatchRestartConverges(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	k := newKube(t)
	defer k.close()
	ns := k.ns
	k.pod(t, ns, "a", nil)
	k.pod(t, ns, "b", nil)
	l := start(t, fmt.Sprintf("resource = \"pods\"\nnamespace = %q", ns))
	defer l.stop()
	l.synced(t)
	if err := l.stop(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	k.deletePod(t, ns, "b")
	k.pod(t, ns, "c", nil)
	out := l.out
	l = run(t, l.src, out)
	defer l.stop()
	waitFor(t, ns+"/c", hasKey(out, ns+"/c"))
	batches := batchKeys(out.Batches())
	if diff := cmp.Diff([]string{ns + "/c", "-" + ns + "/b"}, batches[len(batches)-1]); diff != "" {
		t.Errorf("restart batch (-want +got)\n%s", diff)
	}
	if err := l.stop(); err != nil {
		t.Errorf("Run = %v", err)
	}
}
