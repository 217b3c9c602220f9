package kubernetes

import (
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kschema "k8s.io/apimachinery/pkg/runtime/schema"

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
