package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

var certificates = kschema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}

const readyFamily = "kube_customresource_certificate_ready"

// resourceMetrics runs examples/resource-metrics: the Ready condition of
// each Certificate (a custom resource) is a series on the instance's
// /metrics, scraped as Prometheus would; a condition that turns True
// changes it and a deleted Certificate takes it away.
func (d *demo) resourceMetrics(ctx context.Context) error {
	say("a metrics sink (examples/resource-metrics): each Certificate's Ready condition as a Prometheus series")
	dyn, err := dynamic.NewForConfig(d.srv.RESTConfig())
	if err != nil {
		return err
	}
	if err := installCertificates(ctx, dyn); err != nil {
		return err
	}
	rc := dyn.Resource(certificates).Namespace(ns)
	for name, ready := range map[string]string{"web": "True", "api": "False"} {
		if err := setCertificate(ctx, rc, name, ready); err != nil {
			return err
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := l.Addr().String()
	l.Close()
	run := exec.CommandContext(ctx, d.bin, "run", "--listen", addr, "--log-level", "warn", "-var", "kubeconfig="+d.kubeconfig, "examples/resource-metrics")
	run.Stdout, run.Stderr = prefixWriter("    | "), prefixWriter("    | ")
	if err := run.Start(); err != nil {
		return err
	}
	defer func() { _ = run.Process.Signal(syscall.SIGTERM); _ = run.Wait() }()
	fmt.Printf("    $ curl -s http://%s/metrics | grep %s\n", addr, readyFamily)
	show := func(what string, want int, ready string) error {
		var lines []string
		err := waitFor(ctx, 30*time.Second, what, func() (bool, error) {
			var err error
			lines, err = scrapeFamily(addr)
			return len(lines) == want && (ready == "" || strings.Contains(strings.Join(lines, "\n"), ready)), err
		})
		for _, l := range lines {
			fmt.Println("    | " + l)
		}
		return err
	}
	if err := show("two series served", 2, ""); err != nil {
		return err
	}
	if err := setCertificate(ctx, rc, "api", "True"); err != nil {
		return err
	}
	fmt.Println("    api's Ready condition turned True:")
	if err := show("api's series turned 1", 2, `name="api",namespace="shop",node="sink.prometheus.certificate_ready"} 1`); err != nil {
		return err
	}
	if err := rc.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		return err
	}
	fmt.Println("    deleted Certificate web (kubectl delete certificate web -n shop); its series is gone:")
	return show("web's series removed", 1, "")
}

// scrapeFamily returns the lines of readyFamily that addr's /metrics serves.
func scrapeFamily(addr string) ([]string, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, nil // not listening yet
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics: %s %v", resp.Status, err)
	}
	var out []string
	for l := range strings.Lines(string(b)) {
		if strings.HasPrefix(l, readyFamily+"{") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	slices.Sort(out)
	return out, nil
}

// installCertificates creates a Certificate CRD shaped as cert-manager's
// (its status conditions) and waits until it is served.
func installCertificates(ctx context.Context, dyn dynamic.Interface) error {
	crds := kschema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
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
	if _, err := dyn.Resource(crds).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the Certificate CRD: %w", err)
	}
	return waitFor(ctx, 30*time.Second, "Certificate CRD served", func() (bool, error) {
		_, err := dyn.Resource(certificates).Namespace(ns).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
}

// setCertificate creates or updates Certificate name with its Ready
// condition's status.
func setCertificate(ctx context.Context, rc dynamic.ResourceInterface, name, ready string) error {
	obj, err := rc.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		obj, err = rc.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
			"metadata": map[string]any{"namespace": ns, "name": name},
			"spec":     map[string]any{"secretName": name + "-tls"}}}, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("certificate %s: %w", name, err)
	}
	obj.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": ready}}}
	if _, err := rc.UpdateStatus(ctx, obj, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("certificate %s status: %w", name, err)
	}
	return nil
}
