package bench

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/cilium/ebpf"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// hubAgents gives P9: one hub (`pipeline run`: kubernetes pods -> extract
// podIP -> nats_kv, serving the bucket from its embedded nats-server) and
// 50 agents (50 `pipeline run` processes: nats_kv -> ebpf_map, each its
// own pinned map), all on this machine. A pod's status update giving it a
// new podIP is timed from just before the UPDATE call to the new IP in each
// agent's map; the row is the p99 over every agent and change, goal
// <= 200 ms. The API server's pod watches are counted before the hub starts
// and once every agent is synced: only the hub's one watch may be added.
func hubAgents(ctx context.Context, e *Env) ([]Row, error) {
	agents := 50
	if e.opts.Smoke {
		agents = 3
	}
	name := fmt.Sprintf("hub + %d agents: pod change to every agent's map, p99", agents)
	if why := needRoot(); why != "" {
		return []Row{skipped("P9", name, why)}, nil
	}
	h, err := e.hubFixture(ctx)
	if err != nil {
		return nil, err
	}
	url := "nats://127.0.0.1:" + strconv.Itoa(h.port)
	hub, err := e.startProc("pipeline-hub", e.opts.Pipeline, "run", "--listen", "", "--log-level", "warn", e.hubConfig(h.port))
	if err != nil {
		return nil, err
	}
	defer hub.stop()
	dir := filepath.Join("/sys/fs/bpf", fmt.Sprintf("pipeline-bench-p9-%d", os.Getpid()))
	defer os.RemoveAll(dir)
	cfg := e.agentConfig()
	start := time.Now()
	procs := make([]*proc, agents)
	for i := range agents {
		if procs[i], err = e.startProc(fmt.Sprintf("pipeline-agent-%d", i), e.opts.Pipeline, "run", "--listen", "", "--log-level", "warn",
			"-var", "url="+url, "-var", "pin_dir="+dir, "-var", fmt.Sprintf("agent=%d", i), cfg); err != nil {
			return nil, err
		}
		defer procs[i].stop()
	}
	maps, err := waitAgents(ctx, procs, agents, 1, dir, len(h.pods), h.current, 5*time.Minute)
	defer closeMaps(maps)
	if err != nil {
		return nil, err
	}
	e.logf("hub + %d agents synced %d pods in %s", agents, e.opts.Pods, time.Since(start).Round(time.Millisecond))
	watchesAfter, err := e.oneWatchAdded(ctx, h, agents)
	if err != nil {
		return nil, err
	}
	p50, p99, err := e.fanoutRuns(ctx, append(procs, hub), maps, h.pods, agents)
	if err != nil {
		return nil, err
	}
	r := measured("P9", name, "ms", p99)
	r.Goal = "<= 200 ms"
	r.Note = fmt.Sprintf("p50 %.1f ms; %d changes/run, %d pods; processes; API server pod watches %v -> %v",
		measured("", "", "", p50).Median, e.opts.Changes, e.opts.Pods, h.watches, watchesAfter)
	return []Row{r}, nil
}

// hubFixture is what a hub row sets up before its hub starts.
type hubFixture struct {
	pods    []corev1.Pod
	current [][4]byte // the IPs of a few pods, for waitFull
	watches float64   // the API server's pod watches before the hub
	port    int       // of the hub's embedded nats-server
}

func (e *Env) hubFixture(ctx context.Context) (*hubFixture, error) {
	if err := e.kube(ctx); err != nil {
		return nil, err
	}
	// Earlier rows gave some pods new IPs: the agents' maps are checked for
	// the IPs the pods have now.
	pods, err := e.cs.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: benchLabel})
	if err != nil {
		return nil, err
	}
	h := &hubFixture{pods: pods.Items}
	if h.current, err = currentIPs(pods.Items, 8); err != nil {
		return nil, err
	}
	if h.watches, err = e.podWatches(ctx); err != nil {
		return nil, err
	}
	h.port, err = freePort()
	return h, err
}

// oneWatchAdded fails if the hub and its agents added more than one pod
// watch on the API server, and returns the count.
func (e *Env) oneWatchAdded(ctx context.Context, h *hubFixture, agents int) (float64, error) {
	after, err := e.podWatches(ctx)
	if err != nil {
		return 0, err
	}
	if added := after - h.watches; added > 1 {
		return 0, fmt.Errorf("%v pod watches were added on the API server by a hub and %d agents; only the hub's one may be", added, agents)
	}
	return after, nil
}

// fanoutRuns makes opts.Runs runs of fanoutRun and returns each run's p50
// and p99 in ms. On failure it logs the end of every process's log.
func (e *Env) fanoutRuns(ctx context.Context, procs []*proc, maps []*ebpf.Map, pods []corev1.Pod, agents int) (p50, p99 []float64, err error) {
	for run := range e.opts.Runs {
		ds, err := e.fanoutRun(ctx, procs, maps, pods, run)
		if err != nil {
			for _, p := range procs {
				e.logf("%s: %s", filepath.Base(p.log), logTail(p.log, 3))
			}
			return nil, nil, err
		}
		q := percentiles(ds)
		p50, p99 = append(p50, q[0]), append(p99, q[1])
		e.logf("hub + %d agents run %d/%d: p50 %.2f ms p99 %.2f ms over %d arrivals", agents, run+1, e.opts.Runs, q[0], q[1], len(ds))
	}
	return p50, p99, nil
}

// fanoutRun makes opts.Changes changes one at a time, each giving a pod a
// new IP, and returns the delay of each change to each agent's map.
func (e *Env) fanoutRun(ctx context.Context, procs []*proc, maps []*ebpf.Map, pods []corev1.Pod, run int) ([]time.Duration, error) {
	var out []time.Duration
	for i := range e.opts.Changes {
		pod := &pods[(run*e.opts.Changes+i)%len(pods)]
		ip := [4]byte{10, byte(200 + run), byte(i >> 8), byte(i)}
		next := pod.DeepCopy() // built before the clock starts
		setIP(next, ipString(ip))
		t0 := time.Now()
		got, err := e.cs.CoreV1().Pods(e.ns).UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			return nil, fmt.Errorf("update pod status: %w", err)
		}
		*pod = *got
		ds, err := waitEverywhere(ctx, procs, maps, ip, t0)
		if err != nil {
			return nil, err
		}
		out = append(out, ds...)
	}
	return out, nil
}

// waitEverywhere polls every map (a round of lookups, then a pause of
// 100 µs, or 1 µs per map if longer) until each holds ip, and returns
// each map's delay from t0.
func waitEverywhere(ctx context.Context, procs []*proc, maps []*ebpf.Map, ip [4]byte, t0 time.Time) ([]time.Duration, error) {
	ds := make([]time.Duration, len(maps))
	left := len(maps)
	var v uint32
	deadline := t0.Add(30 * time.Second)
	for left > 0 {
		for i, m := range maps {
			if ds[i] == 0 && m.Lookup(&ip, &v) == nil {
				ds[i] = time.Since(t0)
				left--
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("change to %s reached %d of %d agents in 30s", ipString(ip), len(maps)-left, len(maps))
		}
		for _, p := range procs {
			if err := p.exited(); err != nil {
				return nil, err
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// The pause grows with the maps, so that polling many maps does
		// not take a core from the agents it measures.
		time.Sleep(max(100*time.Microsecond, time.Duration(len(maps))*time.Microsecond))
	}
	return ds, nil
}

// hubConfig writes the hub: the bench pods' IPs into bucket pod-ips on an
// embedded nats-server listening on port.
func (e *Env) hubConfig(port int) string {
	return e.writeConfig("hub", fmt.Sprintf(`cluster "bench" {
  kubeconfig = %q
}
source "kubernetes" "pods" {
  cluster   = cluster.bench
  resource  = "pods"
  namespace = %q
  selector  = %q
}
transform "extract" "ips" {
  input = source.kubernetes.pods
  where = try(object.status.podIP, "") != ""
  key   = object.status.podIP
}
sink "nats_kv" "pod_ips" {
  input      = transform.extract.ips
  bucket     = "pod-ips"
  key_prefix = "v1."
  embedded {
    listen    = "127.0.0.1:%d"
    store_dir = %q
  }
}
`, e.kubeconfig, e.ns, benchLabel, port, filepath.Join(e.dir, "hub-nats")))
}

// agentConfig writes an agent: the bucket at var.url into the pinned map
// var.pin_dir/agent-<var.agent>. It has no cluster block: an agent never
// talks to the API server.
func (e *Env) agentConfig() string {
	maxEntries := 2*e.opts.Pods + 2*e.opts.Changes*e.opts.Runs
	return e.writeConfig("agent", fmt.Sprintf(`variable "url" {
  type = string
}
variable "pin_dir" {
  type = string
}
variable "agent" {
  type = string
}
source "nats_kv" "pod_ips" {
  url        = var.url
  bucket     = "pod-ips"
  key_prefix = "v1."
}
sink "ebpf_map" "allowed" {
  input       = source.nats_kv.pod_ips
  pin         = "${var.pin_dir}/agent-${var.agent}"
  max_entries = %d
  key {
    type = "ipv4"
  }
  value {
    type = "u32"
    from = 1
  }
}
`, maxEntries))
}

// waitAgents waits until each of n agents' maps (dir/agent-I) holds want
// entries, agent I running in procs[I/perProc], and opens the maps.
func waitAgents(ctx context.Context, procs []*proc, n, perProc int, dir string, want int, samples [][4]byte, limit time.Duration) ([]*ebpf.Map, error) {
	maps := make([]*ebpf.Map, 0, n)
	deadline := time.Now().Add(limit)
	for i := range n {
		pin := filepath.Join(dir, fmt.Sprintf("agent-%d", i))
		if _, err := waitFull(ctx, procs[i/perProc], pin, want, samples, time.Until(deadline)); err != nil {
			return maps, fmt.Errorf("agent %d: %w", i, err)
		}
		m, err := ebpf.LoadPinnedMap(pin, &ebpf.LoadPinOptions{ReadOnly: true})
		if err != nil {
			return maps, err
		}
		maps = append(maps, m)
	}
	return maps, nil
}

func closeMaps(maps []*ebpf.Map) {
	for _, m := range maps {
		m.Close()
	}
}

func (e *Env) writeConfig(kind, cfg string) string {
	e.configs++
	path := filepath.Join(e.dir, fmt.Sprintf("%s-%d.hcl", kind, e.configs))
	_ = os.WriteFile(path, []byte(cfg), 0o644)
	return path
}

// podWatches reads the API server's count of open pod watches
// (apiserver_longrunning_requests{resource="pods",verb="WATCH"}).
func (e *Env) podWatches(ctx context.Context) (float64, error) {
	b, err := e.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("API server metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		return 0, fmt.Errorf("parse API server metrics: %w", err)
	}
	f, ok := fams["apiserver_longrunning_requests"]
	if !ok {
		return 0, fmt.Errorf("API server metrics have no apiserver_longrunning_requests")
	}
	total := 0.0
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["resource"] == "pods" && labels["verb"] == "WATCH" && labels["subresource"] == "" {
			total += m.GetGauge().GetValue()
		}
	}
	return total, nil
}

// currentIPs returns the podIPs of k pods spread over pods, the last
// included.
func currentIPs(pods []corev1.Pod, k int) ([][4]byte, error) {
	if len(pods) == 0 {
		return nil, fmt.Errorf("no pods")
	}
	out := make([][4]byte, 0, k)
	for j := range k {
		raw := pods[(len(pods)-1)*(k-j)/k].Status.PodIP
		ip, err := netip.ParseAddr(raw)
		if err != nil || !ip.Is4() {
			return nil, fmt.Errorf("pod IP %q is not an IPv4 address", raw)
		}
		out = append(out, ip.As4())
	}
	return out, nil
}

// freePort returns a TCP port free on 127.0.0.1 at the time of the call.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
