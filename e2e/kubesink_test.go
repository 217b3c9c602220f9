//go:build integration

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	clientset "k8s.io/client-go/kubernetes"

	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/kubeapitest"
	auditsink "github.com/pipeline/pipeline/sinks/audit"
	kubesink "github.com/pipeline/pipeline/sinks/kubernetes"
	"github.com/pipeline/pipeline/sources/kubernetes"
	"github.com/pipeline/pipeline/sources/static"
	"github.com/pipeline/pipeline/transforms/extract"
	"github.com/pipeline/pipeline/transforms/graceperiod"
)

var netpolGVR = kschema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}

// startKubeSink runs src with the kubernetes sink in the registry.
func startKubeSink(t *testing.T, src string) *running {
	t.Helper()
	return startWith(t, src, kubeRegistry())
}

// kubeRegistry holds the types the kubernetes sink's tests use.
func kubeRegistry() *node.Registry {
	return node.NewRegistry(kubernetes.Spec(), static.Spec(), extract.Spec(), graceperiod.Spec(), kubesink.Spec(), auditsink.Spec())
}

func clients(t *testing.T) (clientset.Interface, dynamic.Interface) {
	t.Helper()
	cfg := srv.RESTConfig()
	cs, err := clientset.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs, dyn
}

func labelNamespace(t *testing.T, cs clientset.Interface, ns string, labels map[string]any) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":%s}}`, jsonOf(labels))
	if _, err := cs.CoreV1().Namespaces().Patch(context.Background(), ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func jsonOf(m map[string]any) string {
	var parts []string
	for k, v := range m {
		if v == nil {
			parts = append(parts, fmt.Sprintf("%q:null", k))
		} else {
			parts = append(parts, fmt.Sprintf("%q:%q", k, v))
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// getObj returns the object, or nil when it does not exist.
func getObj(t *testing.T, dyn dynamic.Interface, gvr kschema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	o, err := dyn.Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func tierOf(o *unstructured.Unstructured) string {
	if o == nil {
		return ""
	}
	s, _, _ := unstructured.NestedString(o.Object, "spec", "podSelector", "matchLabels", "tier")
	return s
}

// TestKubeSinkNetworkPolicies: every namespace labelled
// netpol=default-deny gets a NetworkPolicy, which follows the namespace's
// netpol-tier label, goes when the label goes, comes back when deleted by
// hand, has a field edited by hand (an update) restored without
// force_conflicts, and keeps a field another manager set.
func TestKubeSinkNetworkPolicies(t *testing.T) {
	cs, dyn := clients(t)
	a, b := kubeapitest.NewNamespace(t, cs), kubeapitest.NewNamespace(t, cs)
	marker := strings.ReplaceAll(a, "-", "")[:10]
	labelNamespace(t, cs, a, map[string]any{"netpol": "default-deny", "e2e": marker, "netpol-tier": "web"})
	labelNamespace(t, cs, b, map[string]any{"netpol": "default-deny", "e2e": marker})
	r := startKubeSink(t, fmt.Sprintf(`
cluster "k" {
  kubeconfig = %s
}
source "kubernetes" "ns" {
  cluster  = cluster.k
  resource = "namespaces"
  selector = "netpol=default-deny,e2e=%s"
}
sink "kubernetes" "netpol" {
  input           = source.kubernetes.ns
  cluster         = cluster.k
  resync          = "1s"
  owner_value     = "e2e.%s"
  object = {
    apiVersion = "networking.k8s.io/v1"
    kind       = "NetworkPolicy"
    metadata   = { name = "default-deny", namespace = record.value.metadata.name }
    spec = {
      podSelector = { matchLabels = { tier = lookup(record.value.metadata.labels, "netpol-tier", "any") } }
      policyTypes = ["Ingress"]
    }
  }
}
`, hclString(kubeconfig(t)), marker, marker))
	r.waitReady(t)
	eventually(t, 30*time.Second, "policies created", func() bool {
		return tierOf(getObj(t, dyn, netpolGVR, a, "default-deny")) == "web" && tierOf(getObj(t, dyn, netpolGVR, b, "default-deny")) == "any"
	})

	// Another manager's field stays through our applies.
	other := `{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"default-deny","namespace":"` + a +
		`","annotations":{"team":"blue"}}}`
	if _, err := dyn.Resource(netpolGVR).Namespace(a).Patch(context.Background(), "default-deny", types.ApplyPatchType, []byte(other),
		metav1.PatchOptions{FieldManager: "other"}); err != nil {
		t.Fatal(err)
	}
	labelNamespace(t, cs, a, map[string]any{"netpol-tier": "db"})
	eventually(t, 30*time.Second, "policy changed with the label", func() bool {
		return tierOf(getObj(t, dyn, netpolGVR, a, "default-deny")) == "db"
	})
	if o := getObj(t, dyn, netpolGVR, a, "default-deny"); o.GetAnnotations()["team"] != "blue" {
		t.Errorf("another manager's annotation was lost: %v", o.GetAnnotations())
	}

	// A hand edit of a field we own is restored at the next resync.
	o := getObj(t, dyn, netpolGVR, a, "default-deny")
	_ = unstructured.SetNestedField(o.Object, "hacked", "spec", "podSelector", "matchLabels", "tier")
	if _, err := dyn.Resource(netpolGVR).Namespace(a).Update(context.Background(), o, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "hand edit restored", func() bool {
		return tierOf(getObj(t, dyn, netpolGVR, a, "default-deny")) == "db"
	})

	// A hand-deleted object comes back.
	if err := dyn.Resource(netpolGVR).Namespace(b).Delete(context.Background(), "default-deny", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "deleted policy recreated", func() bool {
		return getObj(t, dyn, netpolGVR, b, "default-deny") != nil
	})

	// An unlabelled object of the same kind is never pruned.
	foreign := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
		"metadata": map[string]any{"name": "foreign", "namespace": b}, "spec": map[string]any{"podSelector": map[string]any{}}}}
	if _, err := dyn.Resource(netpolGVR).Namespace(b).Create(context.Background(), foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The label goes: the policy is pruned, and only it.
	labelNamespace(t, cs, b, map[string]any{"netpol": nil})
	eventually(t, 30*time.Second, "policy pruned", func() bool {
		return getObj(t, dyn, netpolGVR, b, "default-deny") == nil
	})
	after := reconciles(r, "sink.kubernetes.netpol")
	eventually(t, 30*time.Second, "two more resyncs", func() bool { return reconciles(r, "sink.kubernetes.netpol") >= after+2 })
	if getObj(t, dyn, netpolGVR, b, "foreign") == nil || getObj(t, dyn, netpolGVR, a, "default-deny") == nil {
		t.Error("an object the sink does not own, or still wants, was deleted")
	}

	// explain shows the object, the last apply and its resourceVersion.
	ex := r.rt.Explain(context.Background(), a+"/default-deny")
	if len(ex.Entries) != 1 || !strings.Contains(strings.Join(ex.Entries[0].Detail, "\n"), "last apply: ok") {
		t.Errorf("explain: %+v", ex.Entries)
	}
}

// nodeCounter reads a counter a node registered through its Env.
func nodeCounter(r *running, name string) float64 {
	mfs, _ := r.met.NodeGatherer().Gather()
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// reconciles is how many full reconciles sink has run.
func reconciles(r *running, sink string) uint64 {
	mfs, _ := r.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "pipeline_sink_reconcile_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "node" && l.GetValue() == sink {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}

// TestKubeSinkRunsToConfigMaps: a custom resource (a Run) is the source;
// each Run gets a ConfigMap owned by it (ownerReference) and its status
// names the ConfigMap (status = true); a deleted Run's ConfigMap is pruned.
func TestKubeSinkRunsToConfigMaps(t *testing.T) {
	cs, dyn := clients(t)
	ns := kubeapitest.NewNamespace(t, cs)
	runs := installRunCRD(t, dyn)
	r := startKubeSink(t, fmt.Sprintf(`
cluster "k" {
  kubeconfig = %s
}
source "kubernetes" "runs" {
  cluster     = cluster.k
  api_version = "paddock.e2e.test/v1alpha1"
  kind        = "Run"
  namespace   = %q
}
sink "kubernetes" "config" {
  input           = source.kubernetes.runs
  cluster         = cluster.k
  namespaces      = [%q]
  owner_reference = record.value
  object = {
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata   = { name = "run-${record.value.metadata.name}", namespace = record.value.metadata.namespace }
    data       = { prompt = record.value.spec.prompt }
  }
}
sink "kubernetes" "status" {
  input   = source.kubernetes.runs
  cluster = cluster.k
  status  = true
  object = {
    apiVersion = "paddock.e2e.test/v1alpha1"
    kind       = "Run"
    metadata   = { name = record.value.metadata.name, namespace = record.value.metadata.namespace }
    status     = { configMap = "run-${record.value.metadata.name}" }
  }
}
`, hclString(kubeconfig(t)), ns, ns))
	mk := func(name, prompt string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "paddock.e2e.test/v1alpha1", "kind": "Run",
			"metadata": map[string]any{"name": name, "namespace": ns}, "spec": map[string]any{"prompt": prompt}}}
		got, err := dyn.Resource(runs).Namespace(ns).Create(context.Background(), o, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	r1, _ := mk("r1", "hello"), mk("r2", "world")
	r.waitReady(t)
	cmGVR := kschema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	eventually(t, 30*time.Second, "config maps", func() bool {
		return getObj(t, dyn, cmGVR, ns, "run-r1") != nil && getObj(t, dyn, cmGVR, ns, "run-r2") != nil
	})
	cm := getObj(t, dyn, cmGVR, ns, "run-r1")
	refs := cm.GetOwnerReferences()
	if len(refs) != 1 || refs[0].UID != r1.GetUID() || refs[0].Kind != "Run" || refs[0].Controller == nil || !*refs[0].Controller {
		t.Errorf("ownerReferences %+v, want the Run r1 (uid %s)", refs, r1.GetUID())
	}
	if d, _, _ := unstructured.NestedString(cm.Object, "data", "prompt"); d != "hello" {
		t.Errorf("data.prompt = %q", d)
	}
	eventually(t, 30*time.Second, "run status written", func() bool {
		o := getObj(t, dyn, runs, ns, "r1")
		s, _, _ := unstructured.NestedString(o.Object, "status", "configMap")
		return s == "run-r1"
	})
	if err := dyn.Resource(runs).Namespace(ns).Delete(context.Background(), "r2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "config map of a deleted run pruned", func() bool {
		return getObj(t, dyn, cmGVR, ns, "run-r2") == nil
	})
}

// installRunCRD creates the Run custom resource (once per server) and
// waits until it is served.
func installRunCRD(t *testing.T, dyn dynamic.Interface) kschema.GroupVersionResource {
	t.Helper()
	crdGVR := kschema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "runs.paddock.e2e.test"},
		"spec": map[string]any{
			"group": "paddock.e2e.test", "scope": "Namespaced",
			"names": map[string]any{"plural": "runs", "singular": "run", "kind": "Run", "listKind": "RunList"},
			"versions": []any{map[string]any{"name": "v1alpha1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": map[string]any{
					"spec": map[string]any{"type": "object", "properties": map[string]any{"prompt": map[string]any{"type": "string"}}},
					"status": map[string]any{"type": "object", "properties": map[string]any{
						"configMap": map[string]any{"type": "string"}, "phase": map[string]any{"type": "string"}}},
				}}}}},
		}}}
	_, err := dyn.Resource(crdGVR).Create(context.Background(), crd, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	gvr := kschema.GroupVersionResource{Group: "paddock.e2e.test", Version: "v1alpha1", Resource: "runs"}
	eventually(t, 30*time.Second, "Run CRD served", func() bool {
		_, err := dyn.Resource(gvr).Namespace("default").List(context.Background(), metav1.ListOptions{})
		return err == nil
	})
	return gvr
}

// TestKubeSinkAdmissionDenied: a ValidatingAdmissionPolicy denies one
// ConfigMap; it is counted and explained with the server's message, and
// the others are applied. A conflict with another manager (force_conflicts
// false) fails that object alone, naming the manager.
func TestKubeSinkAdmissionDenied(t *testing.T) {
	cs, dyn := clients(t)
	ns := kubeapitest.NewNamespace(t, cs)
	installDenyPolicy(t, cs, dyn, ns)
	// "clash" is the sink's (its identity and field manager), and another
	// manager took data.color over with another value.
	cmGVR := kschema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	for _, w := range []struct{ manager, body string }{
		{"pipeline.cm", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"clash","namespace":"` + ns +
			`","labels":{"pipeline.io/owner":"e2e.cm"}},"data":{"color":"blue"}}`},
		{"other-team", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"clash","namespace":"` + ns + `"},"data":{"color":"red"}}`},
	} {
		force := true
		if _, err := dyn.Resource(cmGVR).Namespace(ns).Patch(context.Background(), "clash", types.ApplyPatchType, []byte(w.body),
			metav1.PatchOptions{FieldManager: w.manager, Force: &force}); err != nil {
			t.Fatal(err)
		}
	}
	trail := t.TempDir() + "/audit.jsonl"
	r := startKubeSink(t, fmt.Sprintf(`
cluster "k" {
  kubeconfig = %s
}
source "static" "colors" {
  records = { good-1 = "green", bad-1 = "black", good-2 = "blue", clash = "blue" }
}
sink "audit" "trail" {
  input = source.static.colors
  path  = %q
}
sink "kubernetes" "cm" {
  input       = source.static.colors
  cluster     = cluster.k
  namespaces  = [%q]
  owner_value = "e2e.cm"
  object = {
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata   = { name = record.key, namespace = %q }
    data       = { color = record.value }
  }
}
`, hclString(kubeconfig(t)), trail, ns, ns))
	eventually(t, 30*time.Second, "good objects applied", func() bool {
		return getObj(t, dyn, cmGVR, ns, "good-1") != nil && getObj(t, dyn, cmGVR, ns, "good-2") != nil
	})
	if getObj(t, dyn, cmGVR, ns, "bad-1") != nil {
		t.Error("the denied object exists")
	}
	var bad, clashEx engine.SinkEntry
	eventually(t, 30*time.Second, "failures explained", func() bool {
		e1 := r.rt.Explain(context.Background(), ns+"/bad-1").Entries
		e2 := r.rt.Explain(context.Background(), ns+"/clash").Entries
		if len(e1) != 1 || len(e2) != 1 || e1[0].LastError == "" || e2[0].LastError == "" {
			return false
		}
		bad, clashEx = e1[0], e2[0]
		return true
	})
	if !strings.Contains(bad.LastError, "rejected by the API server") || !strings.Contains(bad.LastError, "no bad config maps") {
		t.Errorf("denied object's error: %s", bad.LastError)
	}
	if !strings.Contains(strings.Join(bad.Detail, "\n"), "no bad config maps") {
		t.Errorf("explain detail: %q", bad.Detail)
	}
	if !strings.Contains(clashEx.LastError, `"other-team"`) {
		t.Errorf("conflict error does not name the other manager: %s", clashEx.LastError)
	}
	// The audit trail records each apply with the server's resourceVersion.
	good, err := dyn.Resource(cmGVR).Namespace(ns).Get(context.Background(), "good-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "apply in the audit trail", func() bool {
		b, _ := os.ReadFile(trail)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, `"object_applied"`) && strings.Contains(l, ns+"/good-1") &&
				strings.Contains(l, `"resource_version":"`+good.GetResourceVersion()+`"`) {
				return true
			}
		}
		return false
	})
	if got := nodeCounter(r, "pipeline_sink_kubernetes_rejected_total"); got < 1 {
		t.Errorf("rejected_total = %v", got)
	}
}

// installDenyPolicy makes the API server deny ConfigMaps named bad-* in ns,
// and waits until it does.
func installDenyPolicy(t *testing.T, cs clientset.Interface, dyn dynamic.Interface, ns string) {
	t.Helper()
	vap := kschema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}
	vapb := kschema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"}
	name := "deny-bad-" + ns
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"failurePolicy": "Fail",
			"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{
				"apiGroups": []any{""}, "apiVersions": []any{"v1"}, "operations": []any{"CREATE", "UPDATE"}, "resources": []any{"configmaps"}}}},
			"validations": []any{map[string]any{"expression": "!object.metadata.name.startsWith('bad')", "message": "no bad config maps here"}},
		}}}
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"policyName": name, "validationActions": []any{"Deny"},
			"matchResources": map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": ns}}}},
	}}
	ctx := context.Background()
	if _, err := dyn.Resource(vap).Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dyn.Resource(vap).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	if _, err := dyn.Resource(vapb).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dyn.Resource(vapb).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bad-probe"}}
	eventually(t, 30*time.Second, "admission policy in force", func() bool {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil
	})
}
