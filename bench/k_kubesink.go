package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// listsPerRun is how many LISTs K1c's figure is the mean of, and how many
// periodic resyncs K1d's is.
const listsPerRun = 5

// kubeSinkApply measures K1: `pipeline run` applying n ConfigMaps (a
// static source -> sink "kubernetes", 16 in flight) into an empty
// namespace, against the hand-written floor (bench/contenders/ssafloor: a
// client-go loop of server-side applies with 16 workers), each a fresh
// process timed from its start to the n-th object seen by a watch; then a
// second pipeline process over the n unchanged objects, with a resync of
// 1 s: its reconciles must write nothing, and the mean time of its
// periodic resyncs (connections warm) is set against one LIST of them.
func kubeSinkApply(ctx context.Context, e *Env) ([]Row, error) {
	n := 1000
	if e.opts.Smoke {
		n = 50
	}
	if err := e.kube(ctx); err != nil {
		return nil, err
	}
	floorBin := e.contender("ssafloor")
	if _, err := os.Stat(floorBin); err != nil {
		return nil, fmt.Errorf("contender ssafloor: %w (run make contenders)", err)
	}
	dyn, err := dynamic.NewForConfig(e.srv.RESTConfig())
	if err != nil {
		return nil, err
	}
	var floor, pipe, resync, startup, list []time.Duration
	var writes float64
	for run := range e.opts.Runs {
		ns := fmt.Sprintf("k1-floor-%d", run)
		d, err := e.applyRun(ctx, dyn, ns, "pipeline.io/owner=floor", n, floorBin,
			"-kubeconfig", e.kubeconfig, "-namespace", ns, "-n", fmt.Sprint(n), "-concurrency", "16")
		if err != nil {
			return nil, fmt.Errorf("floor: %w", err)
		}
		floor = append(floor, d)
		ns = fmt.Sprintf("k1-pipe-%d", run)
		cfg := e.kubeSinkConfig(ns, n, "")
		d, err = e.applyRun(ctx, dyn, ns, "pipeline.io/owner=pipeline.k1", n, e.opts.Pipeline,
			"run", "--listen", "", "--log-level", "warn", cfg)
		if err != nil {
			return nil, fmt.Errorf("pipeline: %w", err)
		}
		pipe = append(pipe, d)
		s, r, w, err := e.resyncRun(ctx, e.kubeSinkConfig(ns, n, "1s"))
		if err != nil {
			return nil, fmt.Errorf("resync: %w", err)
		}
		startup, resync, writes = append(startup, s), append(resync, r), writes+w
		start := time.Now()
		for range listsPerRun {
			if _, err := dyn.Resource(configMaps).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: "pipeline.io/owner=pipeline.k1"}); err != nil {
				return nil, err
			}
		}
		list = append(list, time.Since(start)/listsPerRun)
		e.logf("kube sink run %d/%d: floor %s, pipeline %s, resync %s (%v writes), LIST %s", run+1, e.opts.Runs,
			floor[run].Round(time.Millisecond), pipe[run].Round(time.Millisecond), r.Round(time.Millisecond), w, list[run].Round(time.Millisecond))
	}
	what := fmt.Sprintf("%d ConfigMaps", n)
	fl := measured("K1a", "floor: client-go server-side apply loop, 16 workers, "+what, "ms", millis(floor))
	p := measured("K1b", "kubernetes sink: apply "+what+" into an empty namespace", "ms", millis(pipe)).against(fl, "<= 1.2x")
	p.Note = "process start to the last object seen by a watch"
	l := measured("K1c", "one LIST of the "+what+" (consistent, label selector; mean of 5)", "ms", millis(list))
	rs := measured("K1d", "kubernetes sink: resync over "+what+" unchanged", "ms", millis(resync)).against(l, "<= 1.5x")
	rs.Note = fmt.Sprintf("writes: %v (goal 0); mean of 5 periodic resyncs; a fresh process's first: %.0f ms", writes, measured("", "", "", millis(startup)).Median)
	return []Row{fl, p, l, rs}, nil
}

// kubeSinkConfig writes the K1 configuration: n records, each a ConfigMap;
// resync sets the sink's resync when not empty.
func (e *Env) kubeSinkConfig(ns string, n int, resync string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cluster \"bench\" {\n  kubeconfig = %q\n  qps = 100000\n  burst = 100000\n}\n", e.kubeconfig)
	b.WriteString("source \"static\" \"objects\" {\n  records = {\n")
	for i := range n {
		fmt.Fprintf(&b, "    \"cm-%05d\" = \"value-%d\"\n", i, i)
	}
	fmt.Fprintf(&b, `  }
}
sink "kubernetes" "k1" {
  input         = source.static.objects
  cluster       = cluster.bench
  namespaces    = [%q]
  max_in_flight = 16
  owner_value   = "pipeline.k1"
%s  object = {
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata   = { name = record.key, namespace = %q }
    data       = { value = record.value }
  }
}
`, ns, resyncLine(resync), ns)
	e.configs++
	path := filepath.Join(e.dir, fmt.Sprintf("kubesink-%d.hcl", e.configs))
	_ = os.WriteFile(path, []byte(b.String()), 0o644)
	return path
}

// applyRun creates ns, watches its ConfigMaps with label, runs bin and
// returns the time from the process's start to the n-th ADDED event.
func (e *Env) applyRun(ctx context.Context, dyn dynamic.Interface, ns, label string, n int, bin string, args ...string) (time.Duration, error) {
	if _, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx,
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}},
		metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	w, err := dyn.Resource(configMaps).Namespace(ns).Watch(ctx, metav1.ListOptions{LabelSelector: label})
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	p, err := e.startProc("k1-"+ns, bin, args...)
	if err != nil {
		return 0, err
	}
	defer p.stop()
	timeout := time.After(5 * time.Minute)
	done := p.done
	for seen := 0; seen < n; {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return 0, fmt.Errorf("watch of %s ended", ns)
			}
			if ev.Type == watch.Added {
				seen++
			}
		case <-done:
			if p.cmd.ProcessState.ExitCode() != 0 || bin == e.opts.Pipeline {
				return 0, p.exited()
			}
			done = nil // the floor exits when done; its last objects' events are on their way
		case <-timeout:
			return 0, fmt.Errorf("%s: timed out; %v", ns, p.exited())
		}
	}
	return time.Since(p.start), nil
}

func resyncLine(resync string) string {
	if resync == "" {
		return ""
	}
	return fmt.Sprintf("  resync        = %q\n", resync)
}

// resyncRun starts a second pipeline on cfg (its objects all applied, a
// short resync) and returns the durations of its start-up reconcile and of
// the periodic ones after it (their mean), and the objects they wrote.
func (e *Env) resyncRun(ctx context.Context, cfg string) (startup, resync time.Duration, writes float64, err error) {
	addr, err := freeAddr()
	if err != nil {
		return 0, 0, 0, err
	}
	p, err := e.startProc("k1-resync", e.opts.Pipeline, "run", "--listen", addr, "--log-level", "warn", cfg)
	if err != nil {
		return 0, 0, 0, err
	}
	defer p.stop()
	const node = `{node="sink.kubernetes.k1"}`
	const resyncs = listsPerRun // the resync is their mean: one alone swings with the machine's load
	// The reconciles seen at the first scrape that saw any: normally just
	// the start-up one; the resync is what the next ones add.
	var baseCount, baseSum float64
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if err := p.exited(); err != nil {
			return 0, 0, 0, err
		}
		m, err := scrape(ctx, "http://"+addr+"/metrics")
		if err != nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		count, sum := m["pipeline_sink_reconcile_duration_seconds_count"+node], m["pipeline_sink_reconcile_duration_seconds_sum"+node]
		switch {
		case count >= 1 && baseCount == 0:
			baseCount, baseSum = count, sum
		case baseCount > 0 && count >= baseCount+resyncs:
			writes = m[`pipeline_sink_writes_total{node="sink.kubernetes.k1",op="upsert",result="ok"}`] +
				m[`pipeline_sink_writes_total{node="sink.kubernetes.k1",op="delete",result="ok"}`]
			return seconds(baseSum / baseCount), seconds((sum - baseSum) / (count - baseCount)), writes, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0, 0, 0, fmt.Errorf("not %d reconciles within 2 minutes", resyncs+1)
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// scrape reads a Prometheus text exposition into series -> value.
func scrape(ctx context.Context, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "#") {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(l[i+1:], 64); err == nil {
			out[l[:i]] = v
		}
	}
	return out, sc.Err()
}
