//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"
	authorizationv1 "k8s.io/api/authorization/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/internal/kubeapitest"
	kubesink "github.com/pipeline/pipeline/sinks/kubernetes"
)

// kubeSinkConfig has two kubernetes sinks: ConfigMaps in one namespace (a
// Role there) and NetworkPolicies in every namespace (a ClusterRole).
const kubeSinkConfig = `
leader_election {
  lease_name = "ksink"
}
source "static" "names" {
  records = { a = "x" }
}
sink "kubernetes" "config" {
  input      = source.static.names
  namespaces = [%q]
  object     = { apiVersion = "v1", kind = "ConfigMap", metadata = { name = record.key, namespace = %q } }
}
sink "kubernetes" "netpol" {
  input  = source.static.names
  object = {
    apiVersion = "networking.k8s.io/v1"
    kind       = "NetworkPolicy"
    metadata   = { name = "default-deny", namespace = record.key }
    spec       = { podSelector = {} }
  }
}
`

// TestKubeSinkManifestsRBAC proves, as the generated service account and
// with the API server's own access reviews (kubectl auth can-i), that
// `pipeline manifests` grants the kubernetes sink exactly get, list,
// watch, create, patch and delete on the kinds it writes, in its
// namespaces.
func TestKubeSinkManifestsRBAC(t *testing.T) {
	srv := startKube(t)
	admin := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ns := kubeapitest.NewNamespace(t, admin)
	dir := t.TempDir()
	cfgDir := filepath.Join(dir, "cfg")
	writeFile(t, filepath.Join(cfgDir, "main.hcl"), fmt.Sprintf(kubeSinkConfig, ns, ns))
	applyYAML(t, srv, ns, runCLI(t, "manifests", "--mode", "hub", "--namespace", ns, "--name", "ksink", cfgDir))
	rc, err := clientcmd.BuildConfigFromFlags("", serviceAccountKubeconfig(t, srv, admin, ns, "ksink", dir))
	if err != nil {
		t.Fatal(err)
	}
	sa := kubernetes.NewForConfigOrDie(rc)
	canI := func(verb, group, resource, namespace string) bool {
		t.Helper()
		r, err := sa.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(), &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: verb, Group: group, Resource: resource, Namespace: namespace}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("access review: %v", err)
		}
		return r.Status.Allowed
	}
	for _, verb := range []string{"get", "list", "watch", "create", "patch", "delete"} {
		if !canI(verb, "", "configmaps", ns) {
			t.Errorf("cannot %s configmaps in %s", verb, ns)
		}
		if canI(verb, "", "configmaps", "default") {
			t.Errorf("may %s configmaps outside its namespace", verb)
		}
		if !canI(verb, "networking.k8s.io", "networkpolicies", "") {
			t.Errorf("cannot %s networkpolicies in every namespace", verb)
		}
	}
	for _, verb := range []string{"update", "deletecollection"} {
		if canI(verb, "", "configmaps", ns) || canI(verb, "networking.k8s.io", "networkpolicies", "") {
			t.Errorf("may %s: the sink needs only get/list/watch/create/patch/delete", verb)
		}
	}
	if canI("get", "", "secrets", ns) || canI("patch", "apps", "deployments", ns) {
		t.Error("may touch kinds no sink writes")
	}
}

// TestKubeSinkRunsWithGeneratedRBAC runs the configuration's kubernetes
// sinks as the service account of `pipeline manifests`, bound to exactly
// the generated Role and ClusterRole: each creates its objects (a
// server-side apply that creates is authorized as create), updates them,
// lists them and prunes one.
func TestKubeSinkRunsWithGeneratedRBAC(t *testing.T) {
	srv := startKube(t)
	admin := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ns := kubeapitest.NewNamespace(t, admin)
	dir := t.TempDir()
	cfgDir := filepath.Join(dir, "cfg")
	writeFile(t, filepath.Join(cfgDir, "main.hcl"), fmt.Sprintf(kubeSinkConfig, ns, ns))
	applyYAML(t, srv, ns, runCLI(t, "manifests", "--mode", "hub", "--namespace", ns, "--name", "ksink", cfgDir))
	// The sinks set no cluster: they use $KUBECONFIG, here the service
	// account's token.
	t.Setenv("KUBECONFIG", serviceAccountKubeconfig(t, srv, admin, ns, "ksink", dir))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	l := load([]string{cfgDir}, nil)
	if l.diags.HasErrors() {
		t.Fatal(l.diags.Error())
	}
	ctx := context.Background()
	for _, n := range l.graph.Nodes {
		sink, ok := n.Impl().(*kubesink.Sink)
		if !ok {
			continue
		}
		t.Run(n.Address, func(t *testing.T) {
			env, _ := nodetest.Env(t, nil)
			tg, err := sink.Open(ctx, env, node.ModeRun)
			if err != nil {
				t.Fatal(err)
			}
			defer tg.Close()
			write := func(what string, f func(context.Context, []node.Entry), recs ...string) {
				t.Helper()
				var batch []node.Entry
				for i := 0; i+1 < len(recs); i += 2 {
					e, err := tg.Prepare(node.Record{Key: recs[i], Value: cty.StringVal(recs[i+1])})
					if err != nil {
						t.Fatal(err)
					}
					batch = append(batch, e)
				}
				f(ctx, batch)
				for _, e := range batch {
					if e.Err != nil {
						t.Errorf("%s %s as the generated service account: %v", what, e.Key, e.Err)
					}
				}
			}
			// The ConfigMap sink names objects by key in ns, the
			// NetworkPolicy sink writes default-deny in namespace key.
			write("create", tg.Update, ns, "x", "default", "x")
			write("update", tg.Update, ns, "y", "default", "y")
			actual, err := tg.Actual(ctx)
			if err != nil {
				t.Fatalf("list as the generated service account: %v", err)
			}
			if len(actual) != 2 {
				t.Fatalf("listed %d objects, want 2", len(actual))
			}
			// Prune the one that is not in ns (the ConfigMap sink's
			// "default" object, the NetworkPolicy sink's in default).
			var prune []node.Entry
			for _, a := range actual {
				if a.Key != ns+"/"+ns && a.Key != ns+"/default-deny" {
					prune = append(prune, a)
				}
			}
			if len(prune) != 1 {
				t.Fatalf("actual %v: want one object outside %s/%s", actual, ns, ns)
			}
			tg.Delete(ctx, prune)
			if prune[0].Err != nil {
				t.Errorf("prune %s as the generated service account: %v", prune[0].Key, prune[0].Err)
			}
			if actual, err = tg.Actual(ctx); err != nil || len(actual) != 1 {
				t.Errorf("after the prune: %d objects, %v", len(actual), err)
			}
		})
	}
}

// TestKubeSinkPlan plans examples/namespace-policies against a real API
// server: each create shows the fields the server's dry run gives
// (defaults included), the exit status is 2, and nothing is written.
func TestKubeSinkPlan(t *testing.T) {
	srv := startKube(t)
	admin := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ns := kubeapitest.NewNamespace(t, admin)
	if _, err := admin.CoreV1().Namespaces().Patch(context.Background(), ns, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"netpol":"default-deny","netpol-tier":"api"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := srv.WriteKubeconfig(kubeconfig, "test"); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run([]string{"plan", "-var", "kubeconfig=" + kubeconfig, "../../examples/namespace-policies"}, &out, &errb)
	if code != 2 {
		t.Fatalf("plan exit %d, want 2: %s%s", code, out.String(), errb.String())
	}
	t.Logf("plan:\n%s", out.String())
	for _, want := range []string{
		"+ " + ns + "/default-deny",
		`+ spec.ingress = [{"from":[{"podSelector":{"matchLabels":{"tier":"api"}}}]}]`,
		`+ metadata.labels.pipeline.io/owner = "namespace-policies.default-deny"`,
		`+ spec.policyTypes = ["Ingress"]`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("plan lacks %q", want)
		}
	}
	pols, err := admin.NetworkingV1().NetworkPolicies(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(pols.Items) != 0 {
		t.Errorf("plan wrote %d NetworkPolicies (%v)", len(pols.Items), err)
	}
	t.Run("json", func(t *testing.T) { testKubeSinkPlanJSON(t, admin, kubeconfig) })
}

// kubeSinkPlanConfig writes NetworkPolicies from static records: a is
// new, b differs from the object that exists, c is invalid (the server's
// dry run refuses it), and the existing d is wanted by no record. b and d
// were written by the sink (its label and its field manager).
const kubeSinkPlanConfig = `
cluster "k" {
  kubeconfig = %q
}
source "static" "policies" {
  records = {
    a = { tier = "web", types = ["Ingress"] }
    b = { tier = "db", types = ["Ingress"] }
    c = { tier = "web", types = ["Sideways"] }
  }
}
sink "kubernetes" "netpol" {
  input       = source.static.policies
  cluster     = cluster.k
  owner_value = "pipeline.netpol"
  namespaces = [%q]
  object = {
    apiVersion = "networking.k8s.io/v1"
    kind       = "NetworkPolicy"
    metadata   = { name = record.key, namespace = %q }
    spec       = { podSelector = { matchLabels = { tier = record.value.tier } }, policyTypes = record.value.types }
  }
}
`

// testKubeSinkPlanJSON pins the kubernetes sink's part of plan --json
// (testdata/plan_kubernetes_json.golden): each change's action, key,
// before and after, the server's field-level detail and dry_run_error.
func testKubeSinkPlanJSON(t *testing.T, admin kubernetes.Interface, kubeconfig string) {
	ns := kubeapitest.NewNamespace(t, admin)
	for _, name := range []string{"b", "d"} {
		pol := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels: map[string]string{"pipeline.io/owner": "pipeline.netpol"}},
			Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}}}
		pol.TypeMeta = metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"}
		body, err := json.Marshal(pol)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := admin.NetworkingV1().NetworkPolicies(ns).Patch(context.Background(), name, types.ApplyPatchType, body,
			metav1.PatchOptions{FieldManager: "pipeline.netpol"}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(fmt.Sprintf(kubeSinkPlanConfig, kubeconfig, ns, ns)), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"plan", "--json", dir}, &out, &errb); code != 2 {
		t.Fatalf("plan exit %d, want 2: %s%s", code, out.String(), errb.String())
	}
	var doc struct {
		FormatVersion string            `json:"format_version"`
		Sinks         []json.RawMessage `json:"sinks"`
		Summary       json.RawMessage   `json:"summary"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("plan --json: %v\n%s", err, out.String())
	}
	got, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	// The namespace differs from run to run; what the server stamps on
	// the objects (uid, resourceVersion, times) is not shown.
	norm := strings.ReplaceAll(string(got), ns, "NS")
	checkGolden(t, "testdata/plan_kubernetes_json.golden", []byte(norm+"\n"))
}

// kubeStatusSinkConfig writes the status of Run objects (a custom
// resource with a status subresource) in one namespace.
const kubeStatusSinkConfig = `
leader_election {
  lease_name = "kstatus"
}
source "static" "runs" {
  records = { r1 = "Done" }
}
sink "kubernetes" "runstatus" {
  input      = source.static.runs
  namespaces = [%q]
  status     = true
  object     = { apiVersion = "example.com/v1", kind = "Run", metadata = { name = record.key, namespace = %q }, status = { phase = record.value } }
}
`

// TestKubeStatusSinkRunsWithGeneratedRBAC runs a status sink as the
// service account of `pipeline manifests`: with exactly the generated
// Role it writes the status of an existing custom resource and releases
// it, and may neither create nor delete the objects.
func TestKubeStatusSinkRunsWithGeneratedRBAC(t *testing.T) {
	srv := startKube(t)
	admin := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	dyn := dynamic.NewForConfigOrDie(srv.RESTConfig())
	createRunCRD(t, dyn, admin)
	ns := kubeapitest.NewNamespace(t, admin)
	runs := dyn.Resource(kschema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "runs"}).Namespace(ns)
	run := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Run",
		"metadata": map[string]any{"name": "r1", "namespace": ns}}}
	if _, err := runs.Create(context.Background(), run, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfgDir := filepath.Join(dir, "cfg")
	writeFile(t, filepath.Join(cfgDir, "main.hcl"), fmt.Sprintf(kubeStatusSinkConfig, ns, ns))
	applyYAML(t, srv, ns, runCLI(t, "manifests", "--mode", "hub", "--namespace", ns, "--name", "kstatus", cfgDir))
	t.Setenv("KUBECONFIG", serviceAccountKubeconfig(t, srv, admin, ns, "kstatus", dir))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	l := load([]string{cfgDir}, nil)
	if l.diags.HasErrors() {
		t.Fatal(l.diags.Error())
	}
	var sink *kubesink.Sink
	for _, n := range l.graph.Nodes {
		if s, ok := n.Impl().(*kubesink.Sink); ok {
			sink = s
		}
	}
	ctx := context.Background()
	env, _ := nodetest.Env(t, nil)
	tg, err := sink.Open(ctx, env, node.ModeRun)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	e, err := tg.Prepare(node.Record{Key: "r1", Value: cty.StringVal("Done")})
	if err != nil {
		t.Fatal(err)
	}
	batch := []node.Entry{e}
	tg.Update(ctx, batch)
	if batch[0].Err != nil {
		t.Fatalf("status apply as the generated service account: %v", batch[0].Err)
	}
	phase := func() string {
		o, err := runs.Get(ctx, "r1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p, _, _ := unstructured.NestedString(o.Object, "status", "phase")
		return p
	}
	if p := phase(); p != "Done" {
		t.Errorf("status.phase = %q, want Done", p)
	}
	if actual, err := tg.Actual(ctx); err != nil || len(actual) != 1 {
		t.Errorf("list as the generated service account: %d entries, %v", len(actual), err)
	}
	tg.Delete(ctx, batch)
	if batch[0].Err != nil {
		t.Errorf("release as the generated service account: %v", batch[0].Err)
	}
	if p := phase(); p != "" {
		t.Errorf("after the release status.phase = %q", p)
	}
}

// createRunCRD creates the custom resource Run (example.com/v1, with a
// status subresource) and waits until the API server serves it.
func createRunCRD(t *testing.T, dyn dynamic.Interface, admin kubernetes.Interface) {
	t.Helper()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "runs.example.com"},
		"spec": map[string]any{
			"group": "example.com", "scope": "Namespaced",
			"names": map[string]any{"plural": "runs", "singular": "run", "kind": "Run", "listKind": "RunList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object",
					"x-kubernetes-preserve-unknown-fields": true}}}},
		}}}
	crds := dyn.Resource(kschema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	if _, err := crds.Create(context.Background(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = crds.Delete(context.Background(), "runs.example.com", metav1.DeleteOptions{}) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := admin.Discovery().ServerResourcesForGroupVersion("example.com/v1"); err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("the API server does not serve example.com/v1 Run")
		case <-tick.C:
		}
	}
}
