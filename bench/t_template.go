package bench

import (
	"context"
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

	"github.com/pipeline/pipeline/internal/backendtest"
)

// templateRender gives T1 and T3. T1: the template sink's target rendering 10,000
// backends after one changed, comparing and writing the file atomically
// (fsyncs included), against Go's text/template over a pre-built slice
// written and renamed with the same fsyncs, timed in turn in one process
// (sinks/template's BenchmarkT1).
func templateRender(ctx context.Context, e *Env) ([]Row, error) {
	benchtime := "20x"
	if e.opts.Smoke {
		benchtime = "2x"
	}
	m, err := goBench(ctx, "./sinks/template", "^BenchmarkT1$", benchtime, e.opts.Runs)
	if err != nil {
		return nil, err
	}
	floor := measured("T1a", "floor: text/template of 10,000 backends, write, fsync, rename, fsync dir", "ms", m["floor-ms"])
	floor.Note = fmt.Sprintf("without the fsyncs: %.1f ms", measured("", "", "", m["floor-nosync-ms"]).Median)
	t := measured("T1b", "template sink: render 10,000 backends, compare, atomic write", "ms", m["target-ms"]).against(floor, "<= 1.5x")
	t.Note = "one backend changed per write; floor and sink in turn in one process"
	ex, err := goBench(ctx, "./sinks/template", "^BenchmarkExampleRender3000$", benchtime, e.opts.Runs)
	if err != nil {
		return nil, err
	}
	ms := make([]float64, len(ex["ns/op"]))
	for i, ns := range ex["ns/op"] {
		ms[i] = ns / 1e6
	}
	t3 := measured("T3", "examples/haproxy's template at 3,000 routes (12,000 records): one endpoint's port changed, render, compare, atomic write", "ms", ms)
	t3.Goal = "<= 50 ms"
	t3.Note = "sinks/template's BenchmarkExampleRender3000"
	if cpu := ex["cpu-ms"]; len(cpu) > 0 {
		// The process's CPU time per change (GC included): what a loaded
		// machine changes less than the clock.
		t3.Note += fmt.Sprintf("; CPU per change %.1f ms", measured("", "", "", cpu).Median)
	}
	return []Row{floor, t, t3}, nil
}

// templateLive gives T2: an EndpointSlice change on the API server (its
// only endpoint moves to another backend: the other port of this host's
// address, as EndpointSlices refuse loopback ones) until HTTP requests through
// HAProxy reach the new backend: the pipeline renders haproxy.cfg, runs
// haproxy -c on it, swaps it and sends SIGUSR2 to HAProxy's master, which
// forks a new worker. Debounce off. Each run makes opts.Changes changes.
func templateLive(ctx context.Context, e *Env) ([]Row, error) {
	const id = "T2"
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		return []Row{skipped(id, "EndpointSlice change live in HAProxy", "skipped: no haproxy (apt-get install haproxy)")}, nil
	}
	if err := e.kube(ctx); err != nil {
		return nil, err
	}
	const ns = "bench-haproxy"
	if _, err := e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create namespace: %w", err)
	}
	ip, err := backendtest.HostIPv4()
	if err != nil {
		return []Row{skipped(id, "EndpointSlice change live in HAProxy", "skipped: "+err.Error())}, nil
	}
	names := []string{"web-1", "web-2"}
	ports, stopBackends, err := backendtest.Serve(ip, names...)
	if err != nil {
		return nil, err
	}
	defer stopBackends()
	listen, err := freeAddr()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(e.dir, "haproxy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cfg, pid := filepath.Join(dir, "haproxy.cfg"), filepath.Join(dir, "haproxy.pid")
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{"kubernetes.io/service-name": "web"}},
		AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Port: ptrTo(int32(ports[0]))}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{ip}}}}
	if slice, err = e.cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	p, err := e.startProc("pipeline-template", e.opts.Pipeline, "run", "--listen", "", "--log-level", "warn",
		e.writeConfig("template", templateConfig(e.kubeconfig, ns, cfg, pid, listen)))
	if err != nil {
		return nil, err
	}
	defer p.stop()
	if err := waitFile(ctx, p, cfg, time.Minute); err != nil {
		return nil, err
	}
	if out, err := exec.CommandContext(ctx, haproxy, "-W", "-D", "-f", cfg, "-p", pid).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("start haproxy: %w: %s", err, out)
	}
	defer backendtest.StopPidFile(pid)
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	if _, err := waitServed(ctx, p, client, listen, names[0], time.Now()); err != nil {
		return nil, err
	}
	var p50, p99 []float64
	for run := range e.opts.Runs {
		var ds []time.Duration
		for i := range e.opts.Changes {
			// HAProxy takes a moment to settle after a reload, and the sink
			// spaces reloads by reload_interval (1s): each change comes
			// after that, so the row times the path, not the spacing.
			time.Sleep(1100 * time.Millisecond)
			to := (i + 1) % 2
			slice.Ports[0].Port = ptrTo(int32(ports[to]))
			t0 := time.Now()
			if slice, err = e.cs.DiscoveryV1().EndpointSlices(ns).Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
				return nil, err
			}
			d, err := waitServed(ctx, p, client, listen, names[to], t0)
			if err != nil {
				log, _ := os.ReadFile(p.log)
				file, _ := os.ReadFile(cfg)
				return nil, fmt.Errorf("%w; the pipeline logged: %s; haproxy.cfg ends: %s", err, tail(string(log), 600), strings.ReplaceAll(tail(string(file), 200), "\n", " | "))
			}
			ds = append(ds, d)
		}
		q := percentiles(ds)
		p50, p99 = append(p50, q[0]), append(p99, q[1])
		e.logf("template change live in haproxy run %d/%d: p50 %.1f ms p99 %.1f ms", run+1, e.opts.Runs, q[0], q[1])
	}
	name := fmt.Sprintf("EndpointSlice change live in HAProxy %s, %d changes/run", "%s", e.opts.Changes)
	a := measured("T2", fmt.Sprintf(name, "p50"), "ms", p50)
	b := measured("T2'", fmt.Sprintf(name, "p99"), "ms", p99)
	a.Note = "render, haproxy -c, swap, SIGUSR2, new worker; debounce off; changes 1.1s apart"
	return []Row{a, b}, nil
}

func ptrTo[T any](v T) *T { return &v }

// templateConfig is T2's pipeline: EndpointSlices -> addresses -> haproxy.cfg.
func templateConfig(kubeconfig, ns, cfg, pid, listen string) string {
	return strings.NewReplacer("KUBECONFIG", kubeconfig, "NAMESPACE", ns, "CFG", cfg, "PIDFILE", pid, "LISTEN", listen).Replace(`
cluster "bench" {
  kubeconfig = "KUBECONFIG"
}
source "kubernetes" "slices" {
  cluster   = cluster.bench
  resource  = "endpointslices"
  group     = "discovery.k8s.io"
  namespace = "NAMESPACE"
}
transform "extract" "endpoints" {
  input    = source.kubernetes.slices
  for_each = flatten([for ep in try(object.endpoints, []) : ep.addresses])
  key      = "${each.value}:${object.ports[0].port}"
  value    = {}
}
sink "template" "haproxy" {
  input         = transform.extract.endpoints
  path          = "CFG"
  check_command = ["haproxy", "-c", "-q", "-f", "{{path}}"]
  reload_signal = "SIGUSR2"
  pid_file      = "PIDFILE"
  template      = <<-EOT
    global
      log stderr format raw local0 warning
    defaults
      mode http
      timeout connect 1s
      timeout client 5s
      timeout server 5s
    frontend fe
      bind LISTEN
      default_backend be
    backend be
    %{ for i, r in records ~}
      server s${i} ${r.key}
    %{ endfor ~}
  EOT
}
`)
}

// waitFile waits until path exists.
func waitFile(ctx context.Context, p *proc, path string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if err := p.exited(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not rendered after %s (log %s)", path, limit, p.log)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitServed polls through HAProxy, a new connection each time, until the
// answer is want, and returns the delay from t0.
func waitServed(ctx context.Context, p *proc, c *http.Client, listen, want string, t0 time.Time) (time.Duration, error) {
	deadline := t0.Add(30 * time.Second)
	last := ""
	for {
		if resp, err := c.Get("http://" + listen + "/"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if last = string(b); last == want {
				return time.Since(t0), nil
			}
		} else {
			last = err.Error()
		}
		if err := p.exited(); err != nil {
			return 0, err
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("HAProxy does not reach %s after 30s (last answer %q)", want, last)
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		time.Sleep(500 * time.Microsecond)
	}
}
