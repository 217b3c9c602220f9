package kubernetes

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

func TestRunConnectFailure(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	prefix := `cluster "c" {
  endpoint = "https://` + closedAddress(t) + `"
  token = "` + goodToken + `"
}`
	s := mustBuild(t, prefix, "cluster = cluster.c\nresource = \"pods\"")
	env, health := nodetest.Env(t, nil)
	err := s.Run(context.Background(), env, nodetest.NewOutput())
	var ce *ConnectError
	if !errors.As(err, &ce) || ce.Phase != PhaseReachability {
		t.Fatalf("Run = %v, want a reachability error", err)
	}
	if strings.Contains(err.Error(), goodToken) || strings.Contains(health.Detail, goodToken) {
		t.Error("the token leaked into the error or the health detail")
	}
	if !strings.HasPrefix(err.Error(), "source.kubernetes.test: ") {
		t.Errorf("error %q does not name the address", err)
	}
	if diff := cmp.Diff([]node.State{node.Pending, node.Down}, health.States()); diff != "" {
		t.Errorf("health (-want +got)\n%s", diff)
	}
}

func TestResolveNamespace(t *testing.T) {
	dir := t.TempDir()
	nsFile := filepath.Join(dir, "namespace")
	if err := os.WriteFile(nsFile, []byte("pipeline\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pods := resolved{gvr: podsGVR, namespaced: true}
	nodes := resolved{gvr: kschema.GroupVersionResource{Version: "v1", Resource: "nodes"}}
	tests := []struct {
		name  string
		body  string
		res   resolved
		file  string
		want  string
		error string
	}{
		{name: "all", body: `resource = "pods"`, res: pods, want: ""},
		{name: "namespace", body: "resource = \"pods\"\nnamespace = \"shop\"", res: pods, want: "shop"},
		{name: "own", body: "resource = \"pods\"\nnamespaced_watch = true", res: pods, file: nsFile, want: "pipeline"},
		{name: "own outside a pod", body: "resource = \"pods\"\nnamespaced_watch = true", res: pods, file: filepath.Join(dir, "none"),
			error: "not running in a pod"},
		{name: "name needs namespace", body: "resource = \"pods\"\nname = \"x\"", res: pods, error: "needs a namespace"},
		{name: "cluster-scoped name", body: "resource = \"nodes\"\nname = \"n1\"", res: nodes, want: ""},
		{name: "cluster-scoped namespace", body: "resource = \"nodes\"\nnamespace = \"shop\"", res: nodes, error: "cluster-scoped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustBuild(t, "", tt.body)
			if tt.file != "" {
				s.nsFile = tt.file
			}
			got, err := s.namespace(tt.res)
			if tt.error != "" {
				if err == nil || !strings.Contains(err.Error(), tt.error) {
					t.Fatalf("err = %v, want %q", err, tt.error)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("namespace = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// TestRecordMetadataOnly: with metadata_only the lister reads
// PartialObjectMetadata; the cache keeps it as an object of the watched
// kind, ignore_fields removed.
func TestRecordMetadataOnly(t *testing.T) {
	s := mustBuild(t, "", "resource = \"pods\"\nmetadata_only = true\nignore_fields = [\"{.metadata.managedFields}\"]")
	w := &watcher{src: s, res: resolved{gvr: podsGVR, gvk: podGVK}}
	md := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
		"metadata": map[string]any{"name": "a", "namespace": "shop", "labels": map[string]any{"app": "web"},
			"managedFields": []any{map[string]any{"manager": "x"}}}}}
	o := w.record(md)
	if o.more == nil || o.more.whole == nil {
		t.Fatalf("record = %#v, want an object holding the whole object", o)
	}
	u := o.more.whole
	if u.GetKind() != "Pod" || u.GetAPIVersion() != "v1" || u.GetLabels()["app"] != "web" || u.GetManagedFields() != nil {
		t.Fatalf("record holds %#v", u)
	}
}

// A relist delivers unchanged objects to no handler; in the cached store
// their slim form must not carry a value that nobody would release.
func TestRecordCachedRelist(t *testing.T) {
	s := mustBuild(t, "", "resource = \"pods\"\nstore = \"cached\"")
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	w := &watcher{src: s, store: store, res: resolved{gvr: podsGVR, gvk: podGVK}}
	first := w.record(newPod("a", "1", nil))
	if first.more.pending.Load() == nil {
		t.Fatal("a new object carries no value")
	}
	first.release()
	if err := store.Add(first); err != nil {
		t.Fatal(err)
	}
	same := w.record(newPod("a", "1", nil))
	if same.more.pending.Load() != nil {
		t.Error("an unchanged object carries a value")
	}
	changed := w.record(newPod("a", "2", nil))
	if changed.more.pending.Load() == nil {
		t.Error("a changed object carries no value")
	}
}

func TestFieldSelector(t *testing.T) {
	tests := []struct{ body, want string }{
		{`resource = "pods"`, ""},
		{"resource = \"pods\"\nname = \"x\"\nnamespace = \"a\"", "metadata.name=x"},
		{"resource = \"pods\"\nname = \"x\"\nnamespace = \"a\"\nfield_selector = \"status.phase=Running\"", "status.phase=Running,metadata.name=x"},
	}
	for _, tt := range tests {
		w := &watcher{src: mustBuild(t, "", tt.body)}
		if got := w.fieldSelector(); got != tt.want {
			t.Errorf("%q: field selector %q, want %q", tt.body, got, tt.want)
		}
	}
}
