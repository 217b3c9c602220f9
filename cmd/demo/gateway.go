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
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/pipeline/pipeline/internal/backendtest"
)

// gatewayAPIVersion is the sigs.k8s.io/gateway-api release whose standard
// CRDs the step applies, from the Go module cache.
const gatewayAPIVersion = "v1.6.3"

var (
	gwGroup   = "gateway.networking.k8s.io"
	gvrRoutes = schema.GroupVersionResource{Group: gwGroup, Version: "v1", Resource: "httproutes"}
)

// gatewayStep runs examples/gateway-api: with the standard Gateway API
// CRDs applied, a GatewayClass, a Gateway and an HTTPRoute become
// haproxy.cfg served by a real HAProxy, and the GatewayClass, Gateway and
// route get their status; a backendRef switched to another Service moves
// the traffic, and a deleted route is no longer served. It is skipped,
// saying so, without HAProxy or without the CRDs' Go module.
func (d *demo) gatewayStep(ctx context.Context) error {
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		say("skipping the Gateway API step: haproxy is not installed (apt-get install haproxy)")
		return nil
	}
	ip, err := backendtest.HostIPv4()
	if err != nil {
		say("skipping the Gateway API step: %v", err)
		return nil
	}
	crdDir, err := gatewayCRDDir(ctx)
	if err != nil {
		say("skipping the Gateway API step: %v", err)
		return nil
	}
	say("a Gateway API controller (examples/gateway-api): the HTTPRoutes of the Gateways of one GatewayClass served by HAProxy, their status written back")
	dyn := dynamic.NewForConfigOrDie(d.srv.RESTConfig())
	if err := applyCRDs(ctx, dyn, crdDir); err != nil {
		return err
	}
	ports, stopBackends, err := backendtest.Serve(ip, "web", "api")
	if err != nil {
		return err
	}
	defer stopBackends()
	if err := d.createGatewayObjects(ctx, dyn, ip, ports); err != nil {
		return err
	}
	dir := filepath.Join(d.dir, "gateway")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	listen := "127.0.0.1:18081"
	stop, err := d.startHAProxyJob(ctx, haproxy, dir, listen, "127.0.0.1:19467", "gateway-job", "examples/gateway-api", "-var", "quiet=100ms")
	if err != nil {
		return err
	}
	defer stop()
	if err := gatewayAnswers(ctx, listen, "web"); err != nil {
		return err
	}
	if err := d.showGatewayStatus(ctx, dyn); err != nil {
		return err
	}
	say("switching the route's backendRef from Service web to Service api: the traffic moves")
	routes := dyn.Resource(gvrRoutes).Namespace(ns)
	r, err := routes.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	rules := []any{map[string]any{"backendRefs": []any{map[string]any{"name": "api", "port": int64(80)}}}}
	if err := unstructured.SetNestedSlice(r.Object, rules, "spec", "rules"); err != nil {
		return err
	}
	if _, err := routes.Update(ctx, r, metav1.UpdateOptions{}); err != nil {
		return err
	}
	if err := gatewayAnswers(ctx, listen, "api"); err != nil {
		return err
	}
	say("deleting the route: it is no longer served")
	if err := routes.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		return err
	}
	return gatewayAnswers(ctx, listen, "status 404")
}

// gatewayCRDDir finds the standard CRDs in the Go module cache,
// downloading the module when it is not there.
func gatewayCRDDir(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "mod", "download", "-json", "sigs.k8s.io/gateway-api@"+gatewayAPIVersion).Output()
	if err != nil {
		return "", fmt.Errorf("go mod download sigs.k8s.io/gateway-api@%s: %w", gatewayAPIVersion, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return "", fmt.Errorf("go mod download -json: no module directory (%v)", err)
	}
	return filepath.Join(mod.Dir, "config", "crd", "standard"), nil
}

// applyCRDs creates the CRDs the example reads and waits until they are served.
func applyCRDs(ctx context.Context, dyn dynamic.Interface, dir string) error {
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	fmt.Printf("    $ kubectl apply --server-side -f %s/{gatewayclasses,gateways,httproutes,referencegrants}\n", dir)
	for _, r := range []string{"gatewayclasses", "gateways", "httproutes", "referencegrants"} {
		b, err := os.ReadFile(filepath.Join(dir, gwGroup+"_"+r+".yaml"))
		if err != nil {
			return err
		}
		var m map[string]any
		if err := yaml.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("%s: %w", r, err)
		}
		if _, err := crds.Create(ctx, &unstructured.Unstructured{Object: m}, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create CRD %s: %w", r, err)
		}
		name := r + "." + gwGroup
		if err := waitFor(ctx, 30*time.Second, "CRD "+name+" established", func() (bool, error) {
			o, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			cs, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
			for _, c := range cs {
				if m, _ := c.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// createGatewayObjects makes the GatewayClass, Gateway, two Services with
// an EndpointSlice each (one backend each, on this host) and the route.
func (d *demo) createGatewayObjects(ctx context.Context, dyn dynamic.Interface, ip string, ports []int) error {
	objs := []struct {
		resource, namespace, doc string
	}{
		{"gatewayclasses", "", `{kind: GatewayClass, metadata: {name: pipeline}, spec: {controllerName: pipeline.dev/gateway-controller}}`},
		{"gateways", ns, `{kind: Gateway, metadata: {name: gw}, spec: {gatewayClassName: pipeline, listeners: [{name: http, port: 80, protocol: HTTP}]}}`},
		{"httproutes", ns, `{kind: HTTPRoute, metadata: {name: web}, spec: {hostnames: [gateway.example], parentRefs: [{name: gw}], rules: [{backendRefs: [{name: web, port: 80}]}]}}`},
	}
	for _, o := range objs {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(o.doc), &m); err != nil {
			return err
		}
		m["apiVersion"] = gwGroup + "/v1"
		gvr := schema.GroupVersionResource{Group: gwGroup, Version: "v1", Resource: o.resource}
		var ri dynamic.ResourceInterface = dyn.Resource(gvr)
		if o.namespace != "" {
			ri = dyn.Resource(gvr).Namespace(o.namespace)
		}
		if _, err := ri.Create(ctx, &unstructured.Unstructured{Object: m}, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create %s: %w", o.resource, err)
		}
		fmt.Printf("    %s\n", o.doc)
	}
	for i, name := range []string{"web", "api"} {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
		if _, err := d.cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			return err
		}
		p, portName := int32(ports[i]), "http"
		slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name + "-gw", Labels: map[string]string{"kubernetes.io/service-name": name}},
			AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Name: &portName, Port: &p}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{ip}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: name + "-1"}}}}
		if _, err := d.cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
			return err
		}
		fmt.Printf("    service %s port 80 (http) -> endpoint %s:%d\n", name, ip, p)
	}
	return nil
}

// showGatewayStatus waits for the statuses the example writes and prints
// them as kubectl would show them.
func (d *demo) showGatewayStatus(ctx context.Context, dyn dynamic.Interface) error {
	get := func(resource, namespace, name string) (map[string]any, error) {
		gvr := schema.GroupVersionResource{Group: gwGroup, Version: "v1", Resource: resource}
		var ri dynamic.ResourceInterface = dyn.Resource(gvr)
		if namespace != "" {
			ri = dyn.Resource(gvr).Namespace(namespace)
		}
		o, err := ri.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return o.Object, nil
	}
	var parents []any
	if err := waitFor(ctx, 30*time.Second, "the route's status written", func() (bool, error) {
		r, err := get("httproutes", ns, "web")
		if err != nil {
			return false, err
		}
		parents, _, _ = unstructured.NestedSlice(r, "status", "parents")
		return len(parents) == 1, nil
	}); err != nil {
		return err
	}
	class, err := get("gatewayclasses", "", "pipeline")
	if err != nil {
		return err
	}
	gw, err := get("gateways", ns, "gw")
	if err != nil {
		return err
	}
	ls, _, _ := unstructured.NestedSlice(gw, "status", "listeners")
	attached := "?"
	if len(ls) == 1 {
		attached = fmt.Sprint(ls[0].(map[string]any)["attachedRoutes"])
	}
	fmt.Printf("    $ kubectl get gatewayclass pipeline -> %s\n", conditionsText(class, "status", "conditions"))
	fmt.Printf("    $ kubectl -n %s get gateway gw -> %s; listener http: attachedRoutes %s\n", ns, conditionsText(gw, "status", "conditions"), attached)
	p := parents[0].(map[string]any)
	fmt.Printf("    $ kubectl -n %s get httproute web -o jsonpath='{.status.parents}' -> controllerName %s: %s\n", ns, p["controllerName"], conditionsText(p, "conditions"))
	return nil
}

func conditionsText(obj map[string]any, path ...string) string {
	cs, _, _ := unstructured.NestedSlice(obj, path...)
	var out []string
	for _, c := range cs {
		m, _ := c.(map[string]any)
		out = append(out, fmt.Sprintf("%v=%v (%v)", m["type"], m["status"], m["reason"]))
	}
	return strings.Join(out, ", ")
}

// gatewayAnswers curls the route's host through HAProxy until every one
// of 8 requests is answered by want (a backend's name or "status N").
func gatewayAnswers(ctx context.Context, listen, want string) error {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var got []string
	err := waitFor(ctx, 30*time.Second, "requests to gateway.example answered by "+want, func() (bool, error) {
		got = got[:0]
		for range 8 {
			req, _ := http.NewRequest("GET", "http://"+listen+"/", nil)
			req.Host = "gateway.example"
			resp, err := client.Do(req)
			if err != nil {
				return false, err
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b = []byte(fmt.Sprintf("status %d", resp.StatusCode))
			}
			if string(b) != want {
				got = append(got, string(b))
			}
		}
		return len(got) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("%w (also answered by %v)", err, got)
	}
	fmt.Printf("    $ curl -H 'Host: gateway.example' http://%s/  (8 times) -> %s\n", listen, want)
	return nil
}
