package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pipeline/pipeline/internal/backendtest"
)

// haproxyStep runs examples/haproxy next to the flagship job: an Ingress
// and an EndpointSlice become haproxy.cfg, checked and loaded by a real
// HAProxy in master-worker mode, and requests through it follow the
// EndpointSlice. It is skipped, saying so, when HAProxy is not installed.
func (d *demo) haproxyStep(ctx context.Context) error {
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		say("skipping the HAProxy step: haproxy is not installed (apt-get install haproxy)")
		return nil
	}
	say("template sink (examples/haproxy): an Ingress and the ready endpoints of an EndpointSlice become haproxy.cfg; haproxy -c checks it, SIGUSR2 loads it")
	dir := filepath.Join(d.dir, "haproxy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ip, err := backendtest.HostIPv4()
	if err != nil {
		say("skipping the HAProxy step: %v", err)
		return nil
	}
	names := []string{"web-1", "web-2"}
	ports, stopBackends, err := backendtest.Serve(ip, names...)
	if err != nil {
		return err
	}
	defer stopBackends()
	listen := "127.0.0.1:18080"
	if err := d.createIngress(ctx, ip, names, ports); err != nil {
		return err
	}
	stop, err := d.startHAProxyJob(ctx, haproxy, dir, listen, "127.0.0.1:19466", "haproxy-job", "examples/haproxy", "-var", "drain=2s")
	if err != nil {
		return err
	}
	defer stop()
	if err := expectServed(ctx, listen, "both pods serve", names...); err != nil {
		return err
	}
	say("deleting web-2's EndpointSlice (its pod went away): it drains for 2s, then the next render drops it over HAProxy's runtime socket, without a reload")
	if err := d.cs.DiscoveryV1().EndpointSlices(ns).Delete(ctx, "web-demo-2", metav1.DeleteOptions{}); err != nil {
		return err
	}
	if err := expectServed(ctx, listen, "only web-1 serves", names[0]); err != nil {
		return err
	}
	runtime, reloads, err := templateCounts("127.0.0.1:19466")
	if err != nil {
		return err
	}
	fmt.Printf("    $ curl http://127.0.0.1:19466/metrics -> runtime updates %.0f, reloads %.0f\n", runtime, reloads)
	if runtime < 1 {
		return fmt.Errorf("the removal did not go over the runtime socket (runtime updates %.0f, reloads %.0f)", runtime, reloads)
	}
	say("the first render was loaded by a reload; the removal was a runtime update: no new HAProxy worker")
	return nil
}

// templateCounts reads the template sink's runtime updates and reloads
// (ok) from the pipeline's metrics at addr.
func templateCounts(addr string) (runtime, reloads float64, err error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		name, rest, _ := strings.Cut(l, "{")
		labels, value, _ := strings.Cut(rest, "} ")
		if !strings.Contains(labels, `result="ok"`) {
			continue
		}
		v, _ := strconv.ParseFloat(strings.TrimSpace(value), 64)
		switch name {
		case "pipeline_sink_template_runtime_updates_total":
			runtime += v
		case "pipeline_sink_template_reloads_total":
			reloads += v
		}
	}
	return runtime, reloads, err
}

// bootstrapHAProxy is the configuration HAProxy starts from before
// pipeline renders one: its frontend answers 503.
func bootstrapHAProxy(listen string) string {
	return "defaults\n  mode http\n  timeout connect 1s\n  timeout client 5s\n  timeout server 5s\n\n" +
		"frontend http\n  bind " + listen + "\n  http-request return status 503 content-type text/plain string \"no backends yet\\n\"\n"
}

func (d *demo) createIngress(ctx context.Context, ip string, names []string, ports []int) error {
	prefix := networkingv1.PathTypePrefix
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web-demo"}, Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
		Host: "shop.example", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
			Path: "/", PathType: &prefix, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web-demo",
				Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}}
	if _, err := d.cs.NetworkingV1().Ingresses(ns).Create(ctx, ing, metav1.CreateOptions{}); err != nil {
		return err
	}
	fmt.Printf("    ingress shop.example -> service web-demo\n")
	// One EndpointSlice per pod: each listens on its own port of this host
	// (EndpointSlices refuse loopback addresses).
	for i, name := range names {
		p := int32(ports[i])
		slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-demo-%d", i+1), Labels: map[string]string{"kubernetes.io/service-name": "web-demo"}},
			AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Port: &p}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{ip}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: name}}}}
		if _, err := d.cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
			return err
		}
		fmt.Printf("    endpointslice %s: pod %s at %s:%d\n", slice.Name, name, ip, p)
	}
	return nil
}

// expectServed curls through HAProxy until exactly want answer.
func expectServed(ctx context.Context, listen, what string, want ...string) error {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var got []string
	err := waitFor(ctx, 30*time.Second, what, func() (bool, error) {
		seen := map[string]bool{}
		for range 8 {
			req, _ := http.NewRequest("GET", "http://"+listen+"/", nil)
			req.Host = "shop.example"
			resp, err := client.Do(req)
			if err != nil {
				return false, err
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			seen[string(b)] = true
		}
		got = got[:0]
		for k := range seen {
			got = append(got, k)
		}
		slices.Sort(got)
		return slices.Equal(got, want), nil
	})
	if err == nil {
		fmt.Printf("    $ curl -H 'Host: shop.example' http://%s/  (8 times) -> answered by %s\n", listen, strings.Join(got, ", "))
	}
	return err
}

// startHAProxyJob starts HAProxy master-worker in dir and then pipeline
// run of example, which renders dir/haproxy.cfg for it and updates it over
// dir/admin.sock. HAProxy runs first, as on a host (the examples' headers
// say so), from a bootstrap configuration that answers 503 until
// pipeline's first render is swapped in and loaded with SIGUSR2. Started
// the other way round, the first render's reload finds no pid file yet.
// stop ends both.
func (d *demo) startHAProxyJob(ctx context.Context, haproxy, dir, listen, admin, name, example string, vars ...string) (stop func(), err error) {
	cfg, pid := filepath.Join(dir, "haproxy.cfg"), filepath.Join(dir, "haproxy.pid")
	if err := os.WriteFile(cfg, []byte(bootstrapHAProxy(listen)), 0o644); err != nil {
		return nil, err
	}
	fmt.Printf("    $ haproxy -W -D -f %s -p %s   (a bootstrap configuration: 503 until pipeline renders the real one)\n", rel(cfg), rel(pid))
	if out, err := exec.CommandContext(ctx, haproxy, "-W", "-D", "-f", cfg, "-p", pid).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("start haproxy: %w: %s", err, out)
	}
	args := append([]string{"run", "--listen", admin, "--log-level", "warn", "-var", "kubeconfig=" + d.kubeconfig, "-var", "namespace=" + ns,
		"-var", "config=" + cfg, "-var", "pid_file=" + pid, "-var", "listen=" + listen,
		"-var", "runtime_socket=" + filepath.Join(dir, "admin.sock")}, vars...)
	args = append(args, example)
	fmt.Printf("    $ pipeline %s\n", strings.Join(args, " "))
	cmd := exec.Command(d.bin, args...)
	cmd.Stdout, cmd.Stderr = prefixWriter("    "+name+"| "), prefixWriter("    "+name+"| ")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		backendtest.StopPidFile(pid)
		return nil, err
	}
	return func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		backendtest.StopPidFile(pid)
	}, nil
}
