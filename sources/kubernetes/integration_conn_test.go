//go:build integration

package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/zclconf/go-cty/cty"
	"go.uber.org/goleak"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kschema "k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/pipeline/pipeline/engine/node"
)

var (
	crdGVR    = kschema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgetGVR = kschema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

// widgetCRD installs the Widget custom resource (once per process) and
// waits until discovery serves it.
func widgetCRD(t *testing.T, k *kube) {
	t.Helper()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.example.com"},
		"spec": map[string]any{"group": "example.com", "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}},
	}}
	_, err := k.dyn.Resource(crdGVR).Create(context.Background(), crd, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	waitFor(t, "Widget in discovery", func() bool {
		_, err := k.cs.Discovery().ServerResourcesForGroupVersion("example.com/v1")
		return err == nil
	})
}

func widget(ns, name, size string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": map[string]any{"size": size}}}
}

func TestCustomResource(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	k := newKube(t)
	defer k.close()
	widgetCRD(t, k)
	ctx := context.Background()
	widgets := k.dyn.Resource(widgetGVR).Namespace(k.ns)
	if _, err := widgets.Create(ctx, widget(k.ns, "w1", "s"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	l := start(t, fmt.Sprintf("api_version = \"example.com/v1\"\nkind = \"Widget\"\nnamespace = %q", k.ns))
	defer l.stop()
	l.synced(t)
	key := k.ns + "/w1"
	if attr(l.out.State()[key], "spec", "size") != cty.StringVal("s") {
		t.Fatalf("state %v", l.out.State())
	}
	w, err := widgets.Get(ctx, "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Object["spec"] = map[string]any{"size": "xl"}
	if _, err := widgets.Update(ctx, w, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "update", func() bool { return attr(l.out.State()[key], "spec", "size") == cty.StringVal("xl") })
	if _, err := widgets.Create(ctx, widget(k.ns, "w2", "m"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "add", hasKey(l.out, k.ns+"/w2"))
	if err := widgets.Delete(ctx, "w1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "delete", func() bool { return !hasKey(l.out, key)() })
	// The same resource by resource + group, preferred version from discovery.
	got := runOnce(t, fmt.Sprintf("resource = \"widgets\"\ngroup = \"example.com\"\nnamespace = %q", k.ns))
	if diff := cmp.Diff([]string{k.ns + "/w2"}, got); diff != "" {
		t.Errorf("by resource (-want +got)\n%s", diff)
	}
}

func TestUnknownKind(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	k := newKube(t)
	defer k.close()
	widgetCRD(t, k)
	health, err := runError(t, clusterBlock(t), "cluster = cluster.k\napi_version = \"example.com/v1\"\nkind = \"Widgit\"")
	if err == nil || !strings.Contains(err.Error(), `did you mean "Widget"?`) {
		t.Errorf("Run = %v, want no match with a suggestion", err)
	}
	if health.State() != node.Down {
		t.Errorf("health %s, want down", health.State())
	}
	_, err = runError(t, clusterBlock(t), "cluster = cluster.k\nresource = \"podz\"")
	if err == nil || !strings.Contains(err.Error(), `did you mean "pods"?`) {
		t.Errorf("Run = %v, want no match with a suggestion", err)
	}
}

func TestCachedStore(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	k := newKube(t)
	defer k.close()
	k.pod(t, k.ns, "p", map[string]string{"app": "web"})
	l := start(t, fmt.Sprintf("resource = \"pods\"\nnamespace = %q\nstore = \"cached\"\ncache_ttl = \"1s\"\n"+
		"ignore_fields = [\"{.metadata.managedFields}\"]", k.ns))
	defer l.stop()
	l.synced(t)
	key := k.ns + "/p"
	if attr(l.out.State()[key], "spec", "containers") == cty.NilVal {
		t.Error("the emitted record is not the whole object")
	}
	w := l.src.current
	for _, obj := range w.store.List() {
		if o, ok := obj.(*object); !ok || o.more == nil || o.more.whole != nil {
			t.Errorf("cache holds %T, want slim objects", obj)
		}
	}
	ctx := context.Background()
	lookup := func() *unstructured.Unstructured {
		t.Helper()
		obj, ok, err := l.src.Lookup(ctx, key)
		if err != nil || !ok {
			t.Fatalf("Lookup = %v, %v", ok, err)
		}
		return obj
	}
	if obj := lookup(); obj.GetManagedFields() != nil || obj.GetLabels()["app"] != "web" {
		t.Errorf("fetched object: managedFields %v labels %v", obj.GetManagedFields(), obj.GetLabels())
	}
	lookup()
	if n := w.cache.fetches.Load(); n != 1 {
		t.Errorf("%d fetches for two lookups within the TTL", n)
	}
	k.relabel(t, k.ns, "p", map[string]string{"app": "api"})
	waitFor(t, "relabel", func() bool { return attr(l.out.State()[key], "metadata", "labels", "app") == cty.StringVal("api") })
	if obj := lookup(); obj.GetLabels()["app"] != "api" || w.cache.fetches.Load() != 2 {
		t.Errorf("after an update: labels %v, fetches %d", obj.GetLabels(), w.cache.fetches.Load())
	}
	time.Sleep(1100 * time.Millisecond) // let the 1s TTL expire
	lookup()
	if n := w.cache.fetches.Load(); n != 3 {
		t.Errorf("%d fetches, want 3 after the TTL expired", n)
	}
}

// Stopping and restarting the API server mid-watch: the source degrades,
// reconnects by itself and converges, and never deletes an object that
// still exists.
func TestAPIServerRestart(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	k := newKube(t)
	defer k.close()
	for _, n := range []string{"a", "b"} {
		k.pod(t, k.ns, n, nil)
	}
	l := start(t, fmt.Sprintf("resource = \"pods\"\nnamespace = %q\nhealth_check_interval = \"0s\"\ndisconnect_after = \"10m\"", k.ns))
	defer l.stop()
	l.synced(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A graceful stop waits up to a minute for open watches; after 3s the
	// harness kills the server, which is the harder case anyway.
	stopCtx, stopCancel := context.WithTimeout(ctx, 3*time.Second)
	err := srv.StopAPIServer(stopCtx)
	stopCancel()
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	waitFor(t, "degraded", func() bool { return l.health.State() == node.Degraded })
	if err := srv.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "healthy again", func() bool { return l.health.State() == node.Healthy })
	k.close() // the old connections died with the server
	k.pod(t, k.ns, "c", nil)
	k.deletePod(t, k.ns, "a")
	waitFor(t, "convergence", func() bool { return cmp.Equal([]string{k.ns + "/b", k.ns + "/c"}, l.keys()) })
	for _, b := range l.out.Batches() {
		for _, d := range b {
			if d.Delete && d.Key != k.ns+"/a" {
				t.Errorf("spurious delete of %s", d.Key)
			}
		}
	}
	if diff := cmp.Diff([]node.State{node.Pending, node.Healthy, node.Degraded, node.Healthy}, l.health.States()); diff != "" {
		t.Errorf("health (-want +got)\n%s", diff)
	}
	if n := testutil.ToFloat64(l.src.current.m.reconnects); n < 1 {
		t.Errorf("reconnects = %v", n)
	}
}

func TestConnectionPhases(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	k := newKube(t)
	defer k.close()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ca := write("ca.pem", srv.CAPEM)
	bad := write("other.pem", otherCA(t))
	block := func(endpoint, ca, token string) string {
		return fmt.Sprintf("cluster \"c\" {\n endpoint = %q\n ca_cert = %q\n token = %q\n}\n", endpoint, ca, token)
	}
	tests := []struct {
		name, prefix string
		phase        Phase
		detail       string
	}{
		{"bad CA", block(srv.URL, bad, srv.AdminToken), PhaseCertificate, "certificate"},
		{"closed port", block("https://"+closedAddress(t), ca, srv.AdminToken), PhaseReachability, "refused"},
		{"bogus token", block(srv.URL, ca, "bogus-token"), PhaseAuthentication, "rejected the credentials"},
		{"unprivileged token", block(srv.URL, ca, srv.UnprivilegedToken), PhaseAuthentication, `user "nobody" may not list pods in namespace`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			health, err := runError(t, tt.prefix, fmt.Sprintf("cluster = cluster.c\nresource = \"pods\"\nnamespace = %q", k.ns))
			var ce *ConnectError
			if !errors.As(err, &ce) || ce.Phase != tt.phase || !strings.Contains(err.Error(), tt.detail) {
				t.Fatalf("Run = %v, want phase %s mentioning %q", err, tt.phase, tt.detail)
			}
			for _, secret := range []string{srv.AdminToken, srv.UnprivilegedToken} {
				if strings.Contains(err.Error(), secret) || strings.Contains(health.Detail, secret) {
					t.Error("a token leaked into the error or the health detail")
				}
			}
			if health.State() != node.Down {
				t.Errorf("health %s, want down", health.State())
			}
		})
	}
}
