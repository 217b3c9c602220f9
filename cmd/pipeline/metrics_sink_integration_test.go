//go:build integration

package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

var certGVR = kschema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}

// TestMetricsSinkOnKubeAPIServer runs examples/resource-metrics against a
// real kube-apiserver holding a Certificate CRD, and scrapes the
// instance's /metrics over HTTP: a Certificate's Ready condition is its
// series, a change of the condition changes it, a deleted Certificate
// takes it away, and a restarted instance serves exactly what the objects
// say (a Certificate deleted while it was down is not served).
func TestMetricsSinkOnKubeAPIServer(t *testing.T) {
	srv := startKube(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := srv.WriteKubeconfig(kubeconfig, "test"); err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	dyn := dynamic.NewForConfigOrDie(srv.RESTConfig())
	installCertificateCRD(t, dyn)
	for _, ns := range []string{"shop", "blog"} {
		if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	certificate(t, dyn, "shop", "web", "True")
	certificate(t, dyn, "shop", "api", "False")
	certificate(t, dyn, "blog", "www", "")

	cfg := "../../examples/resource-metrics"
	run := launchVars(t, cfg, []string{"kubeconfig=" + kubeconfig})
	series := func(ns, name, v string) string {
		return `kube_customresource_certificate_ready{condition="Ready",customresource_group="cert-manager.io",customresource_kind="Certificate",customresource_version="v1",name="` +
			name + `",namespace="` + ns + `",node="sink.prometheus.certificate_ready"} ` + v
	}
	want := []string{series("blog", "www", "0"), series("shop", "api", "0"), series("shop", "web", "1")}
	waitScrape(t, run.addr, want)
	lintScrape(t, run.addr)

	// The condition changes: the series follows.
	certificate(t, dyn, "shop", "api", "True")
	want[1] = series("shop", "api", "1")
	waitScrape(t, run.addr, want)

	// Explain shows the record's series as wanted, written and served.
	ex := explainKey(t, run.addr, "shop/api")
	if !strings.Contains(ex, `name=\"api\",namespace=\"shop\"} 1`) || !strings.Contains(ex, `"status":"applied"`) {
		t.Fatalf("explain shop/api: %s", ex)
	}

	// The console shows the sink like any other node.
	if c := getBody(t, "http://"+run.addr+"/console/node?addr=sink.prometheus.certificate_ready"); !strings.Contains(c, `"type":"prometheus"`) ||
		!strings.Contains(c, `"inputs":["source.kubernetes.certificates"]`) {
		t.Fatalf("console node: %s", c)
	}

	// A deleted Certificate takes its series away.
	if err := dyn.Resource(certGVR).Namespace("shop").Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want = want[:2]
	waitScrape(t, run.addr, want)
	if err := run.stop(); err != nil {
		t.Fatalf("run: %v\n%s", err, run.stderr.String())
	}

	// Deleted while the instance was down: a restart does not serve it.
	if err := dyn.Resource(certGVR).Namespace("blog").Delete(context.Background(), "www", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	run = launchVars(t, cfg, []string{"kubeconfig=" + kubeconfig})
	defer run.stop()
	waitScrape(t, run.addr, []string{series("shop", "api", "1")})
}

// waitScrape scrapes addr's /metrics until the certificate series are
// exactly want, and checks that the whole exposition parses.
func waitScrape(t *testing.T, addr string, want []string) {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	var got []string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		got = nil
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/metrics: %s\n%s", resp.Status, b)
		}
		for l := range strings.Lines(string(b)) {
			if strings.HasPrefix(l, "kube_customresource_certificate_ready{") {
				got = append(got, strings.TrimSpace(l))
			}
		}
		slices.Sort(got)
		if slices.Equal(got, want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("/metrics serves\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
}

// lintScrape lints the whole exposition of addr's /metrics as promtool
// check metrics does, and fails on a problem of the sink's families.
func lintScrape(t *testing.T, addr string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	problems, err := promlint.New(resp.Body).Lint()
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "kube_customresource_") || strings.HasPrefix(p.Metric, "pipeline_sink_prometheus_") {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}
}

func explainKey(t *testing.T, addr, key string) string {
	t.Helper()
	return getBody(t, "http://"+addr+"/explain?key="+url.QueryEscape(key))
}

// getBody GETs u and returns its JSON body.
func getBody(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("GET %s: %v: %s", u, err, b)
	}
	return string(b)
}

// installCertificateCRD creates a Certificate CRD shaped as cert-manager's
// (its status conditions), and waits until it is served.
func installCertificateCRD(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	crdGVR := kschema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	condition := map[string]any{"type": "object", "properties": map[string]any{
		"type": map[string]any{"type": "string"}, "status": map[string]any{"type": "string"}}}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "certificates.cert-manager.io"},
		"spec": map[string]any{
			"group": "cert-manager.io", "scope": "Namespaced",
			"names": map[string]any{"plural": "certificates", "singular": "certificate", "kind": "Certificate", "listKind": "CertificateList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": map[string]any{
					"spec": map[string]any{"type": "object", "properties": map[string]any{"secretName": map[string]any{"type": "string"}}},
					"status": map[string]any{"type": "object", "properties": map[string]any{
						"conditions": map[string]any{"type": "array", "items": condition}}},
				}}}}},
		}}}
	if _, err := dyn.Resource(crdGVR).Create(context.Background(), crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := dyn.Resource(certGVR).Namespace("default").List(context.Background(), metav1.ListOptions{})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Certificate CRD not served: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// certificate creates or updates ns/name with its Ready condition set to
// ready ("" for no conditions).
func certificate(t *testing.T, dyn dynamic.Interface, ns, name, ready string) {
	t.Helper()
	ctx := context.Background()
	rc := dyn.Resource(certGVR).Namespace(ns)
	obj, err := rc.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		obj, err = rc.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
			"metadata": map[string]any{"namespace": ns, "name": name},
			"spec":     map[string]any{"secretName": name + "-tls"}}}, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	if ready == "" {
		return
	}
	obj.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": ready}}}
	if _, err := rc.UpdateStatus(ctx, obj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
