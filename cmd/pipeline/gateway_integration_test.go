//go:build integration

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/pipeline/pipeline/internal/kubeapitest"
)

// gatewayAPIVersion is the release of sigs.k8s.io/gateway-api whose
// standard CRDs the test applies, read from the Go module cache (go mod
// download fetches it through the module proxy on a fresh machine).
const gatewayAPIVersion = "v1.6.3"

var (
	gvrClass   = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gatewayclasses"}
	gvrGateway = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
	gvrRoute   = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}
	gvrGrant   = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1beta1", Resource: "referencegrants"}
)

var kinds = map[string]string{"gatewayclasses": "GatewayClass", "gateways": "Gateway", "httproutes": "HTTPRoute", "referencegrants": "ReferenceGrant"}

// TestGatewayAPI runs examples/gateway-api on the real API server with the
// standard Gateway API CRDs, and a real HAProxy: an HTTPRoute of a Gateway
// of the example's class is served; the GatewayClass, the Gateway and the
// routes get the status the spec says, written with server-side apply
// next to another controller's entry, which is kept; a backendRef switched
// to another Service moves the traffic; a missing Service and a Service of
// another namespace without a ReferenceGrant show in ResolvedRefs; a
// deleted route stops being served; plan then finds nothing to change.
func TestGatewayAPI(t *testing.T) {
	haproxy := needHAProxy(t)
	srv := startKube(t)
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	dyn := dynamic.NewForConfigOrDie(srv.RESTConfig())
	applyGatewayCRDs(t, dyn)
	ns := kubeapitest.NewNamespace(t, cs)
	other := kubeapitest.NewNamespace(t, cs)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := srv.WriteKubeconfig(kubeconfig, "test"); err != nil {
		t.Fatal(err)
	}
	ip := hostIP(t)
	ports := startBackends(t, ip, "web-1", "api-1", "db-1")
	listen := freeAddr(t)
	cfg, pid := filepath.Join(dir, "haproxy.cfg"), filepath.Join(dir, "haproxy.pid")
	const controller = "pipeline.dev/gateway-test"
	ctx := context.Background()

	create := func(gvr schema.GroupVersionResource, namespace, doc string) *unstructured.Unstructured {
		t.Helper()
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("parse %s: %v", doc, err)
		}
		m["apiVersion"] = gvr.GroupVersion().String()
		m["kind"] = kinds[gvr.Resource]
		var ri dynamic.ResourceInterface = dyn.Resource(gvr)
		if namespace != "" {
			ri = dyn.Resource(gvr).Namespace(namespace)
		}
		o, err := ri.Create(ctx, &unstructured.Unstructured{Object: m}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %s: %v", gvr.Resource, err)
		}
		return o
	}
	create(gvrClass, "", `{metadata: {name: ours-`+ns+`}, spec: {controllerName: `+controller+`}}`)
	create(gvrClass, "", `{metadata: {name: other-`+ns+`}, spec: {controllerName: example.com/other}}`)
	create(gvrGateway, ns, `{metadata: {name: gw}, spec: {gatewayClassName: ours-`+ns+`, listeners: [{name: http, port: 80, protocol: HTTP}]}}`)
	create(gvrGateway, ns, `{metadata: {name: other-gw}, spec: {gatewayClassName: other-`+ns+`, listeners: [{name: http, port: 80, protocol: HTTP}]}}`)
	for _, svc := range []struct{ ns, name string }{{ns, "web"}, {ns, "api"}, {other, "db"}} {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: svc.name}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
		if _, err := cs.CoreV1().Services(svc.ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := svc.name + "-1"
		sl := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: pod, Labels: map[string]string{"kubernetes.io/service-name": svc.name}},
			AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(ports[pod]))}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)},
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: pod}}}}
		if _, err := cs.DiscoveryV1().EndpointSlices(svc.ns).Create(ctx, sl, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	routes := dyn.Resource(gvrRoute).Namespace(ns)
	create(gvrRoute, ns, `{metadata: {name: web}, spec: {hostnames: [shop.test], parentRefs: [{name: gw}], rules: [{backendRefs: [{name: web, port: 80}]}]}}`)
	create(gvrRoute, ns, `{metadata: {name: theirs}, spec: {parentRefs: [{name: other-gw}], rules: [{backendRefs: [{name: web, port: 80}]}]}}`)
	create(gvrRoute, ns, `{metadata: {name: db}, spec: {hostnames: [db.test], parentRefs: [{name: gw}],
	  rules: [{backendRefs: [{name: db, namespace: `+other+`, port: 80}]}, {matches: [{path: {type: PathPrefix, value: /missing}}], backendRefs: [{name: missing, port: 80}]}]}}`)
	// Another controller wrote its entry of mixed's status.parents first,
	// with an update (as controller-runtime's Status().Update does).
	mixed := create(gvrRoute, ns, `{metadata: {name: mixed}, spec: {hostnames: [mixed.test], parentRefs: [{name: other-gw}, {name: gw}], rules: [{backendRefs: [{name: web, port: 80}]}]}}`)
	theirEntry := func(message string) map[string]any {
		return map[string]any{"parentRef": map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "other-gw"}, "controllerName": "example.com/other",
			"conditions": []any{map[string]any{"type": "Accepted", "status": "True", "reason": "Accepted", "message": message, "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": int64(1)}}}
	}
	mixed.Object["status"] = map[string]any{"parents": []any{theirEntry("by the other controller")}}
	if _, err := routes.UpdateStatus(ctx, mixed, metav1.UpdateOptions{FieldManager: "other-controller"}); err != nil {
		t.Fatal(err)
	}

	vars := []string{"kubeconfig=" + kubeconfig, "namespace=", "controller_name=" + controller, "config=" + cfg,
		"pid_file=" + pid, "listen=" + listen, "quiet=100ms", "drain=1s", "runtime_socket=" + filepath.Join(dir, "admin.sock")}
	// HAProxy runs first, from a configuration answering 503, as on a
	// host: the first render's reload then finds it settled. (Started
	// after the first render, its first reload comes while it is still
	// starting, and HAProxy 2.6 may ignore the next SIGUSR2: see
	// docs/template.md.)
	bootstrap := "defaults\n  mode http\n  timeout connect 1s\n  timeout client 5s\n  timeout server 5s\n\n" +
		"frontend http\n  bind " + listen + "\n  http-request return status 503\n"
	if err := os.WriteFile(cfg, []byte(bootstrap), 0o644); err != nil {
		t.Fatal(err)
	}
	startHAProxy(t, haproxy, cfg, pid)
	run := launchVars(t, "../../examples/gateway-api", vars)
	defer stopOK(t, run)
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	waitServed(t, client, listen, "web-1")
	waitHost(t, client, listen, "mixed.test", "/", "web-1")
	// db's first rule names a Service of another namespace without a
	// ReferenceGrant, its second a missing Service: both answer 500.
	waitHost(t, client, listen, "db.test", "/", "status 500")
	waitHost(t, client, listen, "db.test", "/missing", "status 500")
	waitHost(t, client, listen, "nobody.test", "/", "status 404")

	// Statuses, as the spec says.
	get := func(gvr schema.GroupVersionResource, namespace, name string) *unstructured.Unstructured {
		t.Helper()
		var ri dynamic.ResourceInterface = dyn.Resource(gvr)
		if namespace != "" {
			ri = dyn.Resource(gvr).Namespace(namespace)
		}
		o, err := ri.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	waitFor(t, 30*time.Second, "the GatewayClass is Accepted", func() bool {
		return condition(get(gvrClass, "", "ours-"+ns).Object, "status", "conditions")["Accepted"] == "True/Accepted"
	})
	// The other class keeps the status the API server defaulted.
	if c := condition(get(gvrClass, "", "other-"+ns).Object, "status", "conditions"); c["Accepted"] != "Unknown/Pending" {
		t.Errorf("the other class's status changed: %v", c)
	}
	waitFor(t, 30*time.Second, "the Gateway is Accepted and Programmed, with 3 routes attached", func() bool {
		gw := get(gvrGateway, ns, "gw").Object
		c := condition(gw, "status", "conditions")
		ls, _, _ := unstructured.NestedSlice(gw, "status", "listeners")
		return c["Accepted"] == "True/Accepted" && c["Programmed"] == "True/Programmed" && len(ls) == 1 &&
			fmt.Sprint(ls[0].(map[string]any)["attachedRoutes"]) == "3" && condition(ls[0].(map[string]any), "conditions")["Accepted"] == "True/Accepted"
	})
	waitFor(t, 30*time.Second, "web's status: Accepted, ResolvedRefs", func() bool {
		p := parents(get(gvrRoute, ns, "web"))
		return len(p) == 1 && p[0].controller == controller && p[0].conditions["Accepted"] == "True/Accepted" &&
			p[0].conditions["ResolvedRefs"] == "True/ResolvedRefs" && p[0].generation == 1
	})
	// explain shows the route's status as wanted and as held.
	if out, code := planCLI("explain", "--against", run.addr, ns+"/web"); code != 0 || !strings.Contains(out, "sink.kubernetes.route_status") || !strings.Contains(out, "ResolvedRefs") {
		t.Errorf("explain %s/web exited %d:\n%s", ns, code, out)
	} else {
		t.Logf("explain %s/web:\n%s", ns, out)
	}
	waitFor(t, 30*time.Second, "db's ResolvedRefs: RefNotPermitted (its first rule's Service is in another namespace)", func() bool {
		p := parents(get(gvrRoute, ns, "db"))
		return len(p) == 1 && p[0].conditions["ResolvedRefs"] == "False/RefNotPermitted"
	})
	defer func() {
		if t.Failed() {
			b, _ := json.MarshalIndent(get(gvrRoute, ns, "mixed").Object, "", " ")
			t.Logf("mixed:\n%s\npipeline's log:\n%s", b, run.stderr.String())
		}
	}()
	waitFor(t, 30*time.Second, "mixed keeps the other controller's entry and gets this one's", func() bool {
		p := parents(get(gvrRoute, ns, "mixed"))
		return len(p) == 2 && p[0].controller == "example.com/other" && p[0].message == "by the other controller" &&
			p[1].controller == controller && p[1].conditions["Accepted"] == "True/Accepted"
	})
	if p := parents(get(gvrRoute, ns, "theirs")); len(p) != 0 {
		t.Errorf("a route of another class's Gateway got a status: %+v", p)
	}

	// The other controller updates its entry: the change stays, and this
	// controller's entry stays beside it.
	m := get(gvrRoute, ns, "mixed")
	ps, _, _ := unstructured.NestedSlice(m.Object, "status", "parents")
	ps[0] = theirEntry("updated by the other controller")
	if err := unstructured.SetNestedSlice(m.Object, ps, "status", "parents"); err != nil {
		t.Fatal(err)
	}
	if _, err := routes.UpdateStatus(ctx, m, metav1.UpdateOptions{FieldManager: "other-controller"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "both entries of mixed stay", func() bool {
		p := parents(get(gvrRoute, ns, "mixed"))
		return len(p) == 2 && p[0].message == "updated by the other controller" && p[1].controller == controller
	})
	time.Sleep(time.Second) // no fight: the two entries stay as they are
	if p := parents(get(gvrRoute, ns, "mixed")); len(p) != 2 || p[0].message != "updated by the other controller" {
		t.Errorf("the other controller's entry was overwritten: %+v", p)
	}

	// A ReferenceGrant permits db's backend: served, ResolvedRefs becomes
	// BackendNotFound (the /missing rule's Service is still missing).
	create(gvrGrant, other, `{metadata: {name: from-`+ns+`}, spec: {from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: `+ns+`}], to: [{group: "", kind: Service}]}}`)
	waitHost(t, client, listen, "db.test", "/", "db-1")
	waitFor(t, 30*time.Second, "db's ResolvedRefs: BackendNotFound", func() bool {
		p := parents(get(gvrRoute, ns, "db"))
		return len(p) == 1 && p[0].conditions["ResolvedRefs"] == "False/BackendNotFound"
	})

	// web's backendRef switched to api: its traffic moves.
	w := get(gvrRoute, ns, "web")
	if err := unstructured.SetNestedSlice(w.Object, []any{map[string]any{"backendRefs": []any{map[string]any{"name": "api", "port": int64(80)}}}}, "spec", "rules"); err != nil {
		t.Fatal(err)
	}
	if _, err := routes.Update(ctx, w, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitServed(t, client, listen, "api-1")
	waitFor(t, 30*time.Second, "web's observedGeneration follows", func() bool {
		p := parents(get(gvrRoute, ns, "web"))
		return len(p) == 1 && p[0].generation == 2
	})

	// A deleted route stops being served, and the listener counts it no more.
	if err := routes.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitServed(t, client, listen, "status 404")
	// Its status went with it: releasing it succeeds, nothing is retried.
	waitFor(t, 30*time.Second, "the deleted route's status released", func() bool {
		m := scrape(t, run.addr)["pipeline_sink_writes_total"]
		var ok float64
		if m != nil {
			for i, s := range m.series {
				if s["node"] == "sink.kubernetes.route_status" && s["op"] == "delete" && s["result"] == "ok" {
					ok += m.values[i]
				}
			}
		}
		return ok >= 1
	})
	waitFor(t, 30*time.Second, "2 routes attached", func() bool {
		ls, _, _ := unstructured.NestedSlice(get(gvrGateway, ns, "gw").Object, "status", "listeners")
		return len(ls) == 1 && fmt.Sprint(ls[0].(map[string]any)["attachedRoutes"]) == "2"
	})

	// plan agrees with what run made: nothing to change.
	args := []string{"plan"}
	for _, v := range vars {
		args = append(args, "-var", v)
	}
	waitFor(t, 30*time.Second, "plan finds nothing to change", func() bool {
		out, code := planCLI(append(args, "../../examples/gateway-api")...)
		if code != 0 {
			t.Logf("plan exited %d:\n%s", code, out)
		}
		return code == 0
	})
}

// applyGatewayCRDs creates the standard CRDs of sigs.k8s.io/gateway-api
// that the example reads and writes, and waits until they are served.
func applyGatewayCRDs(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", "sigs.k8s.io/gateway-api@"+gatewayAPIVersion).Output()
	if err != nil {
		missingInCI(t, "go mod download sigs.k8s.io/gateway-api@%s: %v", gatewayAPIVersion, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download -json: %v\n%s", err, out)
	}
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	var names []string
	for _, r := range []string{"gatewayclasses", "gateways", "httproutes", "referencegrants"} {
		b, err := os.ReadFile(filepath.Join(mod.Dir, "config", "crd", "standard", "gateway.networking.k8s.io_"+r+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		o, err := crds.Create(context.Background(), &unstructured.Unstructured{Object: m}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create CRD %s: %v", r, err)
		}
		names = append(names, o.GetName())
	}
	for _, n := range names {
		waitFor(t, 30*time.Second, "CRD "+n+" is established", func() bool {
			o, err := crds.Get(context.Background(), n, metav1.GetOptions{})
			return err == nil && condition(o.Object, "status", "conditions")["Established"] != "" &&
				strings.HasPrefix(condition(o.Object, "status", "conditions")["Established"], "True")
		})
	}
}

// condition returns the conditions of the list at path as type => "STATUS/REASON".
func condition(obj map[string]any, path ...string) map[string]string {
	cs, _, _ := unstructured.NestedSlice(obj, path...)
	got := map[string]string{}
	for _, c := range cs {
		m, _ := c.(map[string]any)
		got[fmt.Sprint(m["type"])] = fmt.Sprint(m["status"]) + "/" + fmt.Sprint(m["reason"])
	}
	return got
}

// parentStatus is one entry of an HTTPRoute's status.parents.
type parentStatus struct {
	controller string
	conditions map[string]string
	message    string // of the Accepted condition
	generation int64  // observedGeneration of the Accepted condition
}

func parents(route *unstructured.Unstructured) []parentStatus {
	ps, _, _ := unstructured.NestedSlice(route.Object, "status", "parents")
	var got []parentStatus
	for _, p := range ps {
		m, _ := p.(map[string]any)
		e := parentStatus{controller: fmt.Sprint(m["controllerName"]), conditions: condition(m, "conditions")}
		cs, _, _ := unstructured.NestedSlice(m, "conditions")
		for _, c := range cs {
			if cm, _ := c.(map[string]any); cm["type"] == "Accepted" {
				e.message = fmt.Sprint(cm["message"])
				e.generation, _ = cm["observedGeneration"].(int64)
			}
		}
		got = append(got, e)
	}
	return got
}

// waitHost waits until requests for host and path through HAProxy are
// answered by want only (a backend's name, or "status N").
func waitHost(t *testing.T, client *http.Client, listen, host, path, want string) {
	t.Helper()
	var got string
	waitFor(t, 30*time.Second, fmt.Sprintf("%s%s is answered by %s", host, path, want), func() bool {
		got = answer(client, listen, host, path)
		return got == want
	})
}

func answer(client *http.Client, listen, host, path string) string {
	req, _ := http.NewRequest("GET", "http://"+listen+path, nil)
	req.Host = host
	resp, err := client.Do(req)
	if err != nil {
		return "error: " + err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Sprintf("status %d", resp.StatusCode)
	}
	return string(b)
}
