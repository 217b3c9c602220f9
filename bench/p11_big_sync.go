package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// bigNS holds the pods of P11, created once (opts.BigPods of them) and
// read by every contender and run.
const bigNS = "bench-big"

// bigSync measures P11: process start to full pinned map at opts.BigPods
// pods (100,000) for the floor's single LIST and the pipeline (flagship
// chain, no value) reading the initial state as a watch-list stream and
// as one LIST, and how much each makes the API server's resident memory
// rise. The API server is restarted before every contender's run, so
// that each meets it in the same state (a Go heap grown by an earlier
// LIST would hide the next one's rise); the rise is its peak RSS during
// the run (VmHWM, reset at the start) less its RSS at the start.
func bigSync(ctx context.Context, e *Env) ([]Row, error) {
	n := e.opts.BigPods
	name := fmt.Sprintf("initial sync, %d pods", n)
	if why := needRoot(); why != "" {
		return []Row{skipped("P11", name, why)}, nil
	}
	if n <= 0 {
		return []Row{skipped("P11", name, "skipped: -big-pods 0")}, nil
	}
	if _, err := os.Stat(e.opts.Pipeline); err != nil {
		return nil, fmt.Errorf("pipeline binary: %w (run make build)", err)
	}
	if err := e.bigPods(ctx, n); err != nil {
		return nil, err
	}
	defer os.RemoveAll(filepath.Join("/sys/fs/bpf", fmt.Sprintf("pipeline-bench-%d", os.Getpid())))
	own := func(extra ...string) func(pin, selector string) []string {
		return func(pin, selector string) []string {
			return append([]string{"-kubeconfig", e.kubeconfig, "-namespace", bigNS, "-selector", selector,
				"-pin", pin, "-max-entries", fmt.Sprint(2 * n)}, extra...)
		}
	}
	pipe := func(initial string) func(pin, selector string) []string {
		return func(pin, selector string) []string {
			return []string{"run", "--listen", "", "--log-level", "warn",
				e.flagshipIn(bigNS, fmt.Sprintf("\n  initial_sync = %q", initial), pin, selector, 2*n, false)}
		}
	}
	cs := []contender{
		{name: "big-floor-protobuf", bin: e.contender("floor"), args: own()},
		{name: "big-floor-json", bin: e.contender("floor"), args: own("-json")},
		{name: "big-pipeline-watch-list", bin: e.opts.Pipeline, args: pipe("watch_list")},
		{name: "big-pipeline-list", bin: e.opts.Pipeline, args: pipe("list")},
	}
	times := map[string][]time.Duration{}
	rise := map[string][]float64{}
	for run := range e.opts.Runs {
		for _, c := range cs {
			d, mb, err := e.bigRun(ctx, c, n)
			if err != nil {
				return nil, err
			}
			times[c.name] = append(times[c.name], d)
			rise[c.name] = append(rise[c.name], mb)
		}
		e.logf("big initial sync run %d/%d: floor %s (API server +%.0f MB), pipeline watch-list %s (+%.0f MB), list %s (+%.0f MB)",
			run+1, e.opts.Runs, times["big-floor-protobuf"][run].Round(time.Millisecond), rise["big-floor-protobuf"][run],
			times["big-pipeline-watch-list"][run].Round(time.Millisecond), rise["big-pipeline-watch-list"][run],
			times["big-pipeline-list"][run].Round(time.Millisecond), rise["big-pipeline-list"][run])
	}
	proto := measured("P11a", "floor at "+fmt.Sprint(n)+" pods: LIST (protobuf, rv=0) + one BatchUpdate", "ms", millis(times["big-floor-protobuf"]))
	js := measured("P11a'", "floor at "+fmt.Sprint(n)+" pods: LIST (JSON, rv=0) + one BatchUpdate", "ms", millis(times["big-floor-json"]))
	floor, floorName := proto, "big-floor-protobuf"
	if js.Median < proto.Median {
		floor, floorName = js, "big-floor-json"
	}
	wl := measured("P11b", "pipeline run at "+fmt.Sprint(n)+" pods, initial_sync = watch_list", "ms", millis(times["big-pipeline-watch-list"])).against(floor, "<= 0.5x floor")
	ls := measured("P11c", "pipeline run at "+fmt.Sprint(n)+" pods, initial_sync = list", "ms", millis(times["big-pipeline-list"])).against(floor, "")
	wl.Note, ls.Note = "flagship chain (no value), process start to full pinned map", "flagship chain (no value)"
	memFloor := measured("P11d", "API server RSS rise during the floor's LIST ("+floor.ID+")", "MB", rise[floorName])
	memFloor.Note = "peak less start, API server restarted before each run"
	memWL := measured("P11e", "API server RSS rise during the pipeline's watch-list", "MB", rise["big-pipeline-watch-list"]).against(memFloor, "<= P11d")
	memLS := measured("P11f", "API server RSS rise during the pipeline's LIST", "MB", rise["big-pipeline-list"]).against(memFloor, "")
	other := "big-floor-json"
	if floorName == other {
		other = "big-floor-protobuf"
	}
	memOther := measured("P11d'", "API server RSS rise during the other floor's LIST", "MB", rise[other])
	return []Row{proto, js, wl, ls, memFloor, memOther, memWL, memLS}, nil
}

// bigPods creates n pods in bigNS once per Env.
func (e *Env) bigPods(ctx context.Context, n int) error {
	if err := e.kube(ctx); err != nil {
		return err
	}
	if e.bigSeeded {
		return nil
	}
	if _, err := e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bigNS}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace: %w", err)
	}
	start := time.Now()
	if err := createPods(ctx, e.cs, bigNS, n); err != nil {
		return err
	}
	e.bigSeeded = true
	e.logf("created %d pods with a podIP in %s in %s", n, bigNS, time.Since(start).Round(time.Millisecond))
	return nil
}

// bigRun restarts the API server, waits until its pod cache is ready and
// its memory settled, runs contender c to a full map, and returns the
// time and the API server's RSS rise.
func (e *Env) bigRun(ctx context.Context, c contender, n int) (time.Duration, float64, error) {
	if err := e.srv.StopAPIServer(ctx); err != nil {
		return 0, 0, fmt.Errorf("stop kube-apiserver: %w", err)
	}
	if err := e.srv.StartAPIServer(ctx); err != nil {
		return 0, 0, fmt.Errorf("start kube-apiserver: %w", err)
	}
	// A LIST at resourceVersion 0 waits for the watch cache.
	if _, err := e.cs.CoreV1().Pods(bigNS).List(ctx, metav1.ListOptions{ResourceVersion: "0", Limit: 1}); err != nil {
		return 0, 0, fmt.Errorf("wait for the pod cache: %w", err)
	}
	time.Sleep(3 * time.Second) // let the start-up's garbage be collected
	pid := e.srv.APIServerPID()
	base, err := rssMB(pid, "VmRSS")
	if err != nil {
		return 0, 0, err
	}
	// Reset the peak (VmHWM) and also sample, in case the reset is not
	// supported.
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
	peak := base
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if mb, err := rssMB(pid, "VmRSS"); err == nil && mb > peak {
					peak = mb
				}
			}
		}
	})
	r, err := e.runContender(ctx, c, benchLabel, n)
	close(stop)
	wg.Wait()
	if err != nil {
		return 0, 0, err
	}
	if hwm, err := rssMB(pid, "VmHWM"); err == nil && hwm > peak {
		peak = hwm
	}
	return r.d, peak - base, nil
}
