package bench

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
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pipeline/pipeline/internal/backendtest"
)

// haproxyRoutes gives H1..H5: examples/haproxy as a user runs it, on the
// real API server with N Ingresses (host rI.bench, path /, Service svc-I)
// and N EndpointSlices (one ready endpoint each, on one of two HTTP
// backends of this host's address, "blue" and "green", as EndpointSlices
// refuse loopback addresses), and a real HAProxy in master-worker mode,
// for N in opts.Routes (300, 1,000 and 3,000 routes). Each run starts the pipeline
// afresh: the sync is from its start to every route served through
// HAProxy. Then, with a steady request loop over all routes, opts.Changes
// rollouts one at a time: an EndpointSlice's endpoint replaced by another
// pod on the other backend's port, from just before the update until a
// request through HAProxy to that route is first answered by the new
// backend, against a raw watch of the EndpointSlices seeing the same
// update. The quiet time is 1 ms and the drain 0 s, and the changes
// start a second after the sync's reload, so the rows time the path, not
// the example's waits.
func haproxyRoutes(ctx context.Context, e *Env) ([]Row, error) {
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		return []Row{skipped("H1", "examples/haproxy at N routes", "skipped: no haproxy (apt-get install haproxy)")}, nil
	}
	if err := e.kube(ctx); err != nil {
		return nil, err
	}
	ip, err := backendtest.HostIPv4()
	if err != nil {
		return []Row{skipped("H1", "examples/haproxy at N routes", "skipped: "+err.Error())}, nil
	}
	ports, stop, err := backendtest.Serve(ip, "blue", "green")
	if err != nil {
		return nil, err
	}
	defer stop()
	example, err := filepath.Abs(filepath.Join("examples", "haproxy"))
	if err != nil {
		return nil, err
	}
	var rows []Row
	for _, n := range e.opts.Routes {
		h := &haproxyBench{e: e, haproxy: haproxy, example: example, ip: ip, ports: ports, n: n, ns: fmt.Sprintf("bench-h%d", n)}
		rs, err := h.rows(ctx)
		if err != nil {
			return rows, fmt.Errorf("%d routes: %w", n, err)
		}
		rows = append(rows, rs...)
	}
	return rows, nil
}

// haproxyBench is one size of the H rows: its namespace, objects and runs.
type haproxyBench struct {
	e       *Env
	haproxy string
	example string
	ip      string
	ports   []int // of blue and green
	n       int
	ns      string

	slices []*discoveryv1.EndpointSlice // slices[i] is route i's
	color  []int                        // the backend route i's endpoint is on
	gen    int                          // pods made by rollouts
}

// haproxyRun is what one run measured.
type haproxyRun struct {
	sync         time.Duration
	pipe, watch  []time.Duration
	sent, failed int64
	procs        int
	counts       [3]float64 // the sink's runtime updates, reloads and fallbacks over the changes
}

func (h *haproxyBench) rows(ctx context.Context) ([]Row, error) {
	if err := h.seed(ctx); err != nil {
		return nil, err
	}
	var syncs, p50, p95, w50, w95, failed, procs []float64
	var sent int64
	var counts [3]float64
	for run := range h.e.opts.Runs {
		r, err := h.run(ctx, run)
		if err != nil {
			return nil, err
		}
		a, w := quantiles(r.pipe, 0.50, 0.95), quantiles(r.watch, 0.50, 0.95)
		syncs = append(syncs, float64(r.sync.Milliseconds()))
		p50, p95, w50, w95 = append(p50, a[0]), append(p95, a[1]), append(w50, w[0]), append(w95, w[1])
		failed, procs, sent = append(failed, float64(r.failed)), append(procs, float64(r.procs)), sent+r.sent
		for i := range counts {
			counts[i] += r.counts[i]
		}
		h.e.logf("haproxy %d routes run %d/%d: sync %s, change p50 %.1f ms p95 %.1f ms (watch %.1f / %.1f), %d of %d requests failed, %d haproxy processes",
			h.n, run+1, h.e.opts.Runs, r.sync.Round(time.Millisecond), a[0], a[1], w[0], w[1], r.failed, r.sent, r.procs)
	}
	name := func(s string) string { return fmt.Sprintf("examples/haproxy, %d routes: %s", h.n, s) }
	id := func(s string) string { return fmt.Sprintf("H%s-%d", s, h.n) }
	sync := measured(id("1"), name("sync, start to every route served"), "ms", syncs).against(measured("30 s", "", "", []float64{30000}), "<= 30 s")
	watch50 := measured(id("2a"), name(fmt.Sprintf("rollout seen by a raw watch, p50 of %d", h.e.opts.Changes)), "ms", w50)
	pipe50 := measured(id("2b"), name("rollout to first request served by the new endpoint, p50"), "ms", p50).against(watch50, "+<= 50 ms over the watch")
	watch95 := measured(id("3a"), name("rollout seen by a raw watch, p95"), "ms", w95)
	pipe95 := measured(id("3b"), name("rollout to first request served by the new endpoint, p95"), "ms", p95).against(watch95, "+<= 100 ms over the watch")
	pipe50.Note, pipe95.Note = overWatch(p50, w50), overWatch(p95, w95)
	fail := measured(id("4"), name("failed requests of the steady loop"), "requests", failed)
	fail.Goal, fail.Note = "0", fmt.Sprintf("of %d sent over the runs' changes", sent)
	proc := measured(id("5"), name("HAProxy processes after the changes"), "processes", procs)
	proc.Goal = "<= 3"
	proc.Note = fmt.Sprintf("over the runs' changes the sink made %.0f runtime updates and %.0f reloads, %.0f runtime updates fell back to a reload", counts[0], counts[1], counts[2])
	return []Row{sync, watch50, pipe50, watch95, pipe95, fail, proc}, nil
}

// seed creates the namespace, its Ingresses and EndpointSlices, with 32
// clients. Route i starts on blue.
func (h *haproxyBench) seed(ctx context.Context) error {
	cs := h.e.cs
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.ns}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace: %w", err)
	}
	start := time.Now()
	h.slices, h.color = make([]*discoveryv1.EndpointSlice, h.n), make([]int, h.n)
	prefix := networkingv1.PathTypePrefix
	err := parallel(h.n, 32, func(i int) error {
		svc := fmt.Sprintf("svc-%d", i)
		ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ing-%d", i)},
			Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: fmt.Sprintf("r%d.bench", i),
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
					Path: "/", PathType: &prefix, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
						Name: svc, Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}}
		if _, err := cs.NetworkingV1().Ingresses(h.ns).Create(ctx, ing, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create ingress %d: %w", i, err)
		}
		s, err := cs.DiscoveryV1().EndpointSlices(h.ns).Create(ctx, h.slice(i, 0, fmt.Sprintf("pod-%d", i)), metav1.CreateOptions{})
		h.slices[i] = s
		return err
	})
	h.e.logf("created %d Ingresses and EndpointSlices in %s", h.n, time.Since(start).Round(time.Millisecond))
	return err
}

// slice is route i's EndpointSlice with its one endpoint, pod, on color's
// backend.
func (h *haproxyBench) slice(i, color int, pod string) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: fmt.Sprintf("svc-%d-x", i), Labels: map[string]string{"kubernetes.io/service-name": fmt.Sprintf("svc-%d", i)}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Port: ptrTo(int32(h.ports[color]))}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{h.ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptrTo(true)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: h.ns, Name: pod}}},
	}
}

// parallel calls f(0..n-1) from workers goroutines and returns the first
// error.
func parallel(n, workers int, f func(i int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// run starts the pipeline and HAProxy, waits until every route is served,
// then makes opts.Changes rollouts under a steady request loop.
func (h *haproxyBench) run(ctx context.Context, run int) (r haproxyRun, err error) {
	e := h.e
	dir := filepath.Join(e.dir, fmt.Sprintf("haproxy-%d-%d", h.n, run))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, err
	}
	cfg, pid, sock := filepath.Join(dir, "haproxy.cfg"), filepath.Join(dir, "haproxy.pid"), filepath.Join(dir, "admin.sock")
	listen, err := freeAddr()
	if err != nil {
		return r, err
	}
	metrics, err := freeAddr()
	if err != nil {
		return r, err
	}
	args := []string{"run", "--listen", metrics, "--log-level", "warn"}
	for _, v := range []string{"kubeconfig=" + e.kubeconfig, "namespace=" + h.ns, "config=" + cfg, "pid_file=" + pid,
		"runtime_socket=" + sock, "listen=" + listen, "quiet=1ms", "drain=0s"} {
		args = append(args, "--var", v)
	}
	// HAProxy runs before the pipeline starts, as where it is deployed:
	// the pipeline's first render replaces its placeholder and reloads it.
	placeholder := strings.NewReplacer("SOCK", sock, "LISTEN", listen).Replace(haproxyPlaceholder)
	if err := os.WriteFile(cfg, []byte(placeholder), 0o644); err != nil {
		return r, err
	}
	if out, err := exec.CommandContext(ctx, h.haproxy, "-W", "-D", "-f", cfg, "-p", pid).CombinedOutput(); err != nil {
		return r, fmt.Errorf("start haproxy: %w: %s", err, out)
	}
	defer backendtest.StopPidFile(pid)
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	// HAProxy 2.6 ignores a SIGUSR2 that comes while its first worker is
	// still starting: the pipeline starts once the placeholder answers.
	if err := answering(ctx, client, listen); err != nil {
		return r, err
	}
	p, err := e.startProc(fmt.Sprintf("pipeline-haproxy-%d-%d", h.n, run), e.opts.Pipeline, append(args, h.example)...)
	if err != nil {
		return r, err
	}
	defer p.stop()
	if err := h.allServed(ctx, p, client, listen); err != nil {
		return r, h.explain(err, p, cfg)
	}
	r.sync = time.Since(p.start)

	// The first render was loaded by a reload; a runtime update waits a
	// second after a reload (sinks/template): the changes start after it.
	time.Sleep(1100 * time.Millisecond)
	seen, stopWatch, err := h.watch(ctx)
	if err != nil {
		return r, err
	}
	defer stopWatch()
	before := sinkCounts(client, metrics)
	loop := h.steady(listen)
	for i := range e.opts.Changes {
		pipe, watch, err := h.rollout(ctx, p, client, listen, seen, (i*7919+run*131)%h.n)
		if err != nil {
			loop.stop()
			return r, h.explain(err, p, cfg)
		}
		r.pipe, r.watch = append(r.pipe, pipe), append(r.watch, watch)
	}
	r.sent, r.failed = loop.stop()
	after := sinkCounts(client, metrics)
	for i := range after {
		r.counts[i] = after[i] - before[i]
	}
	r.procs = haproxyProcesses(pid)
	return r, nil
}

// haproxyPlaceholder is what HAProxy runs before the pipeline's first
// render: its runtime socket and frontend, no route.
const haproxyPlaceholder = `global
  stats socket SOCK level admin
defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend http
  bind LISTEN
`

// answering waits until HAProxy answers on listen, whatever the answer.
func answering(ctx context.Context, c *http.Client, listen string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := c.Get("http://" + listen + "/")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("HAProxy does not answer on %s after 30s: %w", listen, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// explain adds the pipeline's log and the end of haproxy.cfg to err.
func (h *haproxyBench) explain(err error, p *proc, cfg string) error {
	log, _ := os.ReadFile(p.log)
	file, _ := os.ReadFile(cfg)
	return fmt.Errorf("%w; the pipeline logged: %s; haproxy.cfg ends: %s", err, tail(string(log), 600), strings.ReplaceAll(tail(string(file), 200), "\n", " | "))
}

// allServed waits until every route answers through HAProxy, eight
// routes at a time.
func (h *haproxyBench) allServed(ctx context.Context, p *proc, c *http.Client, listen string) error {
	deadline := time.Now().Add(2 * time.Minute)
	return parallel(h.n, 8, func(i int) error {
		for {
			if a, err := routeGet(c, listen, i); err == nil && (a == "blue" || a == "green") {
				return nil
			}
			if err := p.exited(); err != nil {
				return err
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("route %d not served after 2 minutes", i)
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			time.Sleep(2 * time.Millisecond)
		}
	})
}

// routeGet asks HAProxy for route i and returns the answer of a 200.
func routeGet(c *http.Client, listen string, i int) (string, error) {
	req, err := http.NewRequest("GET", "http://"+listen+"/", nil)
	if err != nil {
		return "", err
	}
	req.Host = fmt.Sprintf("r%d.bench", i)
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("route %d: %s", i, resp.Status)
	}
	return string(b), err
}

// watch records when a raw watch of the namespace's EndpointSlices first
// saw each endpoint pod.
func (h *haproxyBench) watch(ctx context.Context) (*sync.Map, func(), error) {
	list, err := h.e.cs.DiscoveryV1().EndpointSlices(h.ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil, nil, err
	}
	w, err := h.e.cs.DiscoveryV1().EndpointSlices(h.ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		return nil, nil, err
	}
	var seen sync.Map
	go func() {
		for ev := range w.ResultChan() {
			if s, ok := ev.Object.(*discoveryv1.EndpointSlice); ok {
				for _, ep := range s.Endpoints {
					if ep.TargetRef != nil {
						seen.LoadOrStore(ep.TargetRef.Name, time.Now())
					}
				}
			}
		}
	}()
	return &seen, w.Stop, nil
}

// rollout replaces route i's pod by a new one on the other backend and
// returns the delays from just before the update to the first request
// the new backend answered and to the watch seeing the update.
func (h *haproxyBench) rollout(ctx context.Context, p *proc, c *http.Client, listen string, seen *sync.Map, i int) (time.Duration, time.Duration, error) {
	h.gen++
	to := 1 - h.color[i]
	pod := fmt.Sprintf("pod-%d-r%d", i, h.gen)
	next := h.slice(i, to, pod)
	next.ResourceVersion = h.slices[i].ResourceVersion
	want := []string{"blue", "green"}[to]
	t0 := time.Now()
	s, err := h.e.cs.DiscoveryV1().EndpointSlices(h.ns).Update(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		return 0, 0, fmt.Errorf("update EndpointSlice: %w", err)
	}
	h.slices[i], h.color[i] = s, to
	deadline := t0.Add(30 * time.Second)
	last := ""
	for {
		a, err := routeGet(c, listen, i)
		if err == nil && a == want {
			break
		}
		last = a
		if err != nil {
			last = err.Error()
		}
		if err := p.exited(); err != nil {
			return 0, 0, err
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("route %d not served by %s 30s after its rollout (last answer %q)", i, want, last)
		}
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		time.Sleep(200 * time.Microsecond)
	}
	served := time.Since(t0)
	for {
		if at, ok := seen.Load(pod); ok {
			return served, at.(time.Time).Sub(t0), nil
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("the watch did not see %s after 30s", pod)
		}
		time.Sleep(time.Millisecond)
	}
}

// steadyLoop sends requests over every route in turn, each on a new
// connection, until stopped.
type steadyLoop struct{ stop func() (sent, failed int64) }

func (h *haproxyBench) steady(listen string) steadyLoop {
	var sent, failed atomic.Int64
	done := make(chan struct{})
	var stopped atomic.Bool
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	go func() {
		defer close(done)
		for i := 0; !stopped.Load(); i = (i + 1) % h.n {
			sent.Add(1)
			if _, err := routeGet(c, listen, i); err != nil {
				failed.Add(1)
			}
		}
	}()
	return steadyLoop{stop: func() (int64, int64) {
		stopped.Store(true)
		<-done
		return sent.Load(), failed.Load()
	}}
}

// haproxyProcesses counts the master named by the pid file and its
// children: the workers, old ones included.
func haproxyProcesses(pidFile string) int {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return 0
	}
	master := strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
	dirs, _ := os.ReadDir("/proc")
	n := 0
	for _, d := range dirs {
		if d.Name() == master {
			n++
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		_, rest, _ := strings.Cut(string(stat), ") ")
		if f := strings.Fields(rest); len(f) > 1 && f[1] == master {
			n++
		}
	}
	return n
}

// sinkCounts reads the template sink's runtime updates, reloads and
// fallbacks from runtime update to reload from the pipeline's metrics;
// zeros when it does not report them.
func sinkCounts(c *http.Client, addr string) [3]float64 {
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return [3]float64{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out [3]float64
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		v, _ := strconv.ParseFloat(f[1], 64)
		name, labels, _ := strings.Cut(f[0], "{")
		switch {
		case name == "pipeline_sink_template_runtime_updates_total" && strings.Contains(labels, `result="ok"`):
			out[0] += v
		case name == "pipeline_sink_template_reloads_total" && strings.Contains(labels, `result="ok"`):
			out[1] += v
		case name == "pipeline_sink_template_runtime_updates_total" && strings.Contains(labels, `result="fallback"`):
			out[2] += v
		}
	}
	return out
}

// quantiles returns the qs of ds in milliseconds (nearest rank).
func quantiles(ds []time.Duration, qs ...float64) []float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	out := make([]float64, len(qs))
	if len(s) == 0 {
		return out
	}
	for j, q := range qs {
		i := int(q*float64(len(s))+0.5) - 1
		out[j] = float64(s[max(0, min(i, len(s)-1))].Microseconds()) / 1000
	}
	return out
}
