package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// changeLatency measures P2: a pod's status update giving it a new podIP,
// from just before the UPDATE call to the new IP in the pinned map of a
// running pipeline (flagship chain, debounce off), against a raw watch of
// the same pods seeing the same change (the peer), with 10,000 pods
// resident. Each run makes opts.Changes changes one at a time.
func changeLatency(ctx context.Context, e *Env) ([]Row, error) {
	const id = "P2"
	if why := needRoot(); why != "" {
		return []Row{skipped(id, "change latency", why)}, nil
	}
	if err := e.kube(ctx); err != nil {
		return nil, err
	}
	rig, err := e.startLatencyRig(ctx, "pipeline-latency", "", 4*e.opts.Pods+4*e.opts.Changes)
	if err != nil {
		return nil, err
	}
	defer rig.close()

	var p50, p99, w50, w99 []float64
	defer finePolling()()
	for run := range e.opts.Runs {
		viaMap, viaWatch, err := e.latencyRun(ctx, rig, run)
		if err != nil {
			return nil, err
		}
		a, b := percentiles(viaMap), percentiles(viaWatch)
		p50, p99, w50, w99 = append(p50, a[0]), append(p99, a[1]), append(w50, b[0]), append(w99, b[1])
		e.logf("change latency run %d/%d: pipeline p50 %.2f ms p99 %.2f ms, watch p50 %.2f ms p99 %.2f ms",
			run+1, e.opts.Runs, a[0], a[1], b[0], b[1])
	}
	name := fmt.Sprintf("change latency %s, %d changes/run", "%s", e.opts.Changes)
	watch50 := measured("P2a", fmt.Sprintf(name, "p50: raw watch sees it"), "ms", w50)
	watch99 := measured("P2a'", fmt.Sprintf(name, "p99: raw watch sees it"), "ms", w99)
	pipe50 := measured("P2b", fmt.Sprintf(name, "p50: in the pipeline's map"), "ms", p50).against(watch50, "+<= 0.2 ms over P2a")
	pipe99 := measured("P2b'", fmt.Sprintf(name, "p99: in the pipeline's map"), "ms", p99).against(watch99, "+<= 1 ms over P2a'")
	pipe50.Note = overWatch(p50, w50)
	pipe99.Note = overWatch(p99, w99)
	watch50.Note = fmt.Sprintf("status update (new podIP) to event, %d pods resident", e.opts.Pods)
	return []Row{watch50, pipe50, watch99, pipe99}, nil
}

// overWatch says how much later than the watch the map had the changes:
// the median over the runs of each run's difference, both percentiles of
// a run being taken over the same changes (the difference of the two
// rows' medians mixes runs, and a p99 of 200 changes swings from run to
// run with the API server's own delays).
func overWatch(pipe, watch []float64) string {
	d := make([]float64, len(pipe))
	for i := range pipe {
		d[i] = pipe[i] - watch[i]
	}
	r := measured("", "", "ms", d)
	return fmt.Sprintf("%+.2f ms over the watch: median of the runs' differences, per run %+.2f..%+.2f ms", r.Median, r.Min, r.Max)
}

// latencyRig is a pipeline running the flagship chain with its map full,
// the pods it watches, and a raw watch of them recording when each podIP
// first appears: what the change-latency rows measure.
type latencyRig struct {
	p     *proc
	m     *ebpf.Map
	pods  []corev1.Pod
	seen  *sync.Map
	close func()
}

// startLatencyRig starts the pipeline as name (with its admin endpoint on
// listen, none when empty) and waits until its map holds every pod.
func (e *Env) startLatencyRig(ctx context.Context, name, listen string, maxEntries int) (_ *latencyRig, err error) {
	dir := filepath.Join("/sys/fs/bpf", fmt.Sprintf("pipeline-bench-%s-%d", name, os.Getpid()))
	pin := filepath.Join(dir, "latency")
	var undo []func()
	r := &latencyRig{close: func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	undo = append(undo, func() { _ = os.RemoveAll(dir) })
	if r.p, err = e.startProc(name, e.opts.Pipeline, "run", "--listen", listen, "--log-level", "warn",
		e.flagship(pin, benchLabel, maxEntries, false)); err != nil {
		return nil, err
	}
	undo = append(undo, r.p.stop)
	if _, err := waitFull(ctx, r.p, pin, e.opts.Pods, samples(e.opts.Pods, 8), 5*time.Minute); err != nil {
		return nil, err
	}
	if r.m, err = ebpf.LoadPinnedMap(pin, &ebpf.LoadPinOptions{ReadOnly: true}); err != nil {
		return nil, err
	}
	undo = append(undo, func() { r.m.Close() })
	pods, err := e.cs.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: benchLabel})
	if err != nil {
		return nil, err
	}
	r.pods = pods.Items
	w, err := e.cs.CoreV1().Pods(e.ns).Watch(ctx, metav1.ListOptions{LabelSelector: benchLabel, ResourceVersion: pods.ResourceVersion})
	if err != nil {
		return nil, err
	}
	undo = append(undo, w.Stop)
	r.seen = watchIPs(w)
	return r, nil
}

// latencyRun makes opts.Changes changes one at a time, each giving a pod a
// new IP, and returns each change's delay to the map and to the watch.
func (e *Env) latencyRun(ctx context.Context, rig *latencyRig, run int) (viaMap, viaWatch []time.Duration, err error) {
	pods := rig.pods
	for i := range e.opts.Changes {
		pod := &pods[(run*e.opts.Changes+i)%len(pods)]
		ip := [4]byte{10, byte(100 + run), byte(i >> 8), byte(i)}
		next := pod.DeepCopy() // built before the clock starts
		setIP(next, ipString(ip))
		t0 := time.Now()
		got, err := e.cs.CoreV1().Pods(e.ns).UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("update pod status: %w", err)
		}
		*pod = *got
		dm, dw, err := waitChange(ctx, rig.p, rig.m, rig.seen, ip, t0)
		if err != nil {
			return nil, nil, err
		}
		viaMap, viaWatch = append(viaMap, dm), append(viaWatch, dw)
	}
	return viaMap, viaWatch, nil
}

// watchIPs records when the watch first delivered each podIP.
func watchIPs(w watch.Interface) *sync.Map {
	var seen sync.Map
	go func() {
		for ev := range w.ResultChan() {
			if pod, ok := ev.Object.(*corev1.Pod); ok && pod.Status.PodIP != "" {
				seen.LoadOrStore(pod.Status.PodIP, time.Now())
			}
		}
	}()
	return &seen
}

// finePolling lets the calling goroutine poll at intervals of tens of
// microseconds (pause): it locks the goroutine to its thread and lowers
// the thread's timer slack to 1 µs. time.Sleep cannot: Go's netpoller
// waits in whole milliseconds, so a 50 µs time.Sleep takes 1.1 ms on
// these machines, which added about half a millisecond on average to
// every delay polled with it (and to nothing seen through the watch). It
// returns the undo.
func finePolling() func() {
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0)
	return func() {
		_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 0, 0, 0, 0) // the thread's default again
		runtime.UnlockOSThread()
	}
}

// pause sleeps about 20 µs plus the timer's latency (65 µs measured here
// after finePolling, 160 µs without it) in the calling thread.
func pause() {
	ts := unix.NsecToTimespec(20_000)
	_ = unix.Nanosleep(&ts, nil)
}

// waitChange polls the map (every ~65 µs, see finePolling) until ip is in
// it and the watch has seen it, and returns both delays from t0.
func waitChange(ctx context.Context, p *proc, m *ebpf.Map, seen *sync.Map, ip [4]byte, t0 time.Time) (time.Duration, time.Duration, error) {
	var inMap time.Time
	var v uint32
	deadline := t0.Add(30 * time.Second)
	for {
		now := time.Now()
		if inMap.IsZero() && m.Lookup(&ip, &v) == nil {
			inMap = now
		}
		if at, ok := seen.Load(ipString(ip)); ok && !inMap.IsZero() {
			return inMap.Sub(t0), at.(time.Time).Sub(t0), nil
		}
		if now.After(deadline) {
			return 0, 0, fmt.Errorf("change to %s not seen after 30s (map: %v)", ipString(ip), !inMap.IsZero())
		}
		if err := p.exited(); err != nil {
			return 0, 0, err
		}
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		pause()
	}
}

// percentiles returns p50 and p99 in milliseconds (nearest rank).
func percentiles(ds []time.Duration) [2]float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) float64 {
		i := int(q*float64(len(s))+0.5) - 1
		return float64(s[max(0, min(i, len(s)-1))].Microseconds()) / 1000
	}
	return [2]float64{at(0.50), at(0.99)}
}
