//go:build integration

package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/prometheus/common/model"

	"github.com/pipeline/pipeline/internal/backendtest"
	"github.com/pipeline/pipeline/internal/kubeapitest"
)

// TestHAProxyFromKubernetes runs examples/haproxy on the real API server
// and a real HAProxy in master-worker mode: requests through HAProxy reach
// exactly the ready endpoints; a removed endpoint stops receiving traffic
// after the drain; a render HAProxy refuses keeps the old configuration
// serving and shows degraded.
func TestHAProxyFromKubernetes(t *testing.T) {
	haproxy := needHAProxy(t)
	srv := startKube(t)
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ns := kubeapitest.NewNamespace(t, cs)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := srv.WriteKubeconfig(kubeconfig, "test"); err != nil {
		t.Fatal(err)
	}
	ip := hostIP(t)
	ports := startBackends(t, ip, "web-1", "web-2", "web-3")
	listen := freeAddr(t)
	cfg, pid := filepath.Join(dir, "haproxy.cfg"), filepath.Join(dir, "haproxy.pid")

	ctx := context.Background()
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
		Host: "shop.test", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
			Path: "/", PathType: ptr(networkingv1.PathTypePrefix),
			Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}}
	if _, err := cs.NetworkingV1().Ingresses(ns).Create(ctx, ing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// One slice per pod, as each listens on its own port of this host.
	slices := map[string]*discoveryv1.EndpointSlice{}
	for _, pod := range []string{"web-1", "web-2", "web-3"} {
		s, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, endpointSlice(pod, ip, ports[pod], pod != "web-3"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		slices[pod] = s
	}

	run := launchVars(t, "../../examples/haproxy", []string{"kubeconfig=" + kubeconfig, "namespace=" + ns, "config=" + cfg,
		"pid_file=" + pid, "listen=" + listen, "quiet=100ms", "drain=2s", "runtime_socket=" + filepath.Join(dir, "admin.sock")})
	defer stopOK(t, run)
	waitFor(t, 60*time.Second, "the configuration is rendered", func() bool { _, err := os.Stat(cfg); return err == nil })
	startHAProxy(t, haproxy, cfg, pid)

	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	waitServed(t, client, listen, "web-1", "web-2")

	// web-3 becomes ready.
	s3 := slices["web-3"]
	s3.Endpoints[0].Conditions.Ready = ptr(true)
	if _, err := cs.DiscoveryV1().EndpointSlices(ns).Update(ctx, s3, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitServed(t, client, listen, "web-1", "web-2", "web-3")

	// web-2's pod goes away: it keeps its traffic for the drain (2s),
	// then stops receiving any.
	removed := time.Now()
	if err := cs.DiscoveryV1().EndpointSlices(ns).Delete(ctx, "web-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitServed(t, client, listen, "web-1", "web-3")
	if d := time.Since(removed); d < 2*time.Second {
		t.Errorf("the removed endpoint stopped receiving traffic after %v, before its drain of 2s", d)
	}

	// A snippet HAProxy refuses: the check fails, the file and the running
	// configuration stay, the sink shows degraded and the metric counts it.
	before, _ := os.ReadFile(cfg)
	ing, _ = cs.NetworkingV1().Ingresses(ns).Get(ctx, "web", metav1.GetOptions{})
	ing.Annotations = map[string]string{"haproxy.pipeline.dev/backend-snippet": "no-such-keyword 1"}
	ing, err := cs.NetworkingV1().Ingresses(ns).Update(ctx, ing, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "/readyz shows the refused check", func() bool {
		return strings.Contains(get(t, client, "http://"+run.addr+"/readyz"), "unknown keyword 'no-such-keyword'")
	})
	if after, _ := os.ReadFile(cfg); string(after) != string(before) {
		t.Errorf("a refused candidate replaced the file:\n%s", after)
	}
	if m := scrape(t, run.addr)["pipeline_sink_template_checks_total"]; m == nil || sumWhere(m, "result", "failed") < 1 {
		t.Error("pipeline_sink_template_checks_total{result=\"failed\"} did not count the refused check")
	}
	waitServed(t, client, listen, "web-1", "web-3")

	// Fixed: the next change is checked and goes live.
	ing.Annotations = map[string]string{"haproxy.pipeline.dev/backend-snippet": "option redispatch"}
	if _, err = cs.NetworkingV1().Ingresses(ns).Update(ctx, ing, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the fixed snippet is rendered", func() bool {
		b, _ := os.ReadFile(cfg)
		return strings.Contains(string(b), "option redispatch")
	})
	waitFor(t, 30*time.Second, "/readyz clears", func() bool {
		return !strings.Contains(get(t, client, "http://"+run.addr+"/readyz"), "no-such-keyword")
	})
	if b, err := os.ReadFile(cfg + ".bak"); err != nil || !strings.Contains(string(b), "server web-3") || strings.Contains(string(b), "option redispatch") {
		t.Errorf("backup does not hold the file before the fix (%v):\n%s", err, b)
	}
	waitServed(t, client, listen, "web-1", "web-3")
}

// hostIP is an IPv4 address of this host outside loopback: EndpointSlices
// refuse loopback addresses.
func hostIP(t testing.TB) string {
	t.Helper()
	ip, err := backendtest.HostIPv4()
	if err != nil {
		missingInCI(t, "%v", err)
	}
	return ip
}

func ptr[T any](v T) *T { return &v }

func sumWhere(f *family, label, value string) float64 {
	var n float64
	for i, s := range f.series {
		if string(s[model.LabelName(label)]) == value {
			n += f.values[i]
		}
	}
	return n
}

// needHAProxy returns HAProxy's path, or skips (fails in CI) without it.
func needHAProxy(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("haproxy")
	if err != nil {
		missingInCI(t, "no haproxy: %v (apt-get install haproxy)", err)
	}
	return p
}

// startHAProxy starts HAProxy in master-worker mode on cfg and stops it
// when the test ends.
func startHAProxy(t testing.TB, haproxy, cfg, pid string) {
	t.Helper()
	out, err := exec.Command(haproxy, "-W", "-D", "-f", cfg, "-p", pid).CombinedOutput()
	if err != nil {
		t.Fatalf("start haproxy: %v\n%s", err, out)
	}
	t.Cleanup(func() { backendtest.StopPidFile(pid) })
}

// startBackends serves each name on its own port of ip.
func startBackends(t testing.TB, ip string, names ...string) map[string]int {
	t.Helper()
	list, stop, err := backendtest.Serve(ip, names...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	ports := map[string]int{}
	for i, name := range names {
		ports[name] = list[i]
	}
	return ports
}

func endpointSlice(pod, ip string, port int, ready bool) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: pod, Labels: map[string]string{"kubernetes.io/service-name": "web"}},
		AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Port: ptr(int32(port))}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(ready)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: pod}}}}
}

// served returns which backends answered 12 requests through HAProxy.
func served(client *http.Client, listen string) map[string]bool {
	got := map[string]bool{}
	for range 12 {
		req, _ := http.NewRequest("GET", "http://"+listen+"/", nil)
		req.Host = "shop.test"
		resp, err := client.Do(req)
		if err != nil {
			got["error: "+err.Error()] = true
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			got[fmt.Sprintf("status %d", resp.StatusCode)] = true
			continue
		}
		got[string(b)] = true
	}
	return got
}

// waitServed waits until requests through HAProxy reach exactly want.
func waitServed(t *testing.T, client *http.Client, listen string, want ...string) {
	t.Helper()
	var got map[string]bool
	waitFor(t, 30*time.Second, fmt.Sprintf("requests reach exactly %v", want), func() bool {
		got = served(client, listen)
		return fmt.Sprint(slices.Sorted(maps.Keys(got))) == fmt.Sprint(want)
	})
}
