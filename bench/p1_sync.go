package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// contender is one way to fill the map from the pods: a process started
// fresh for every run.
type contender struct {
	name string
	bin  string
	args func(pin, selector string) []string
}

func (e *Env) contenders(maxEntries int) []contender {
	child := func(mode string, extra ...string) func(pin, selector string) []string {
		return func(pin, selector string) []string {
			return append([]string{mode, "-kubeconfig", e.kubeconfig, "-namespace", e.ns, "-selector", selector,
				"-pin", pin, "-max-entries", fmt.Sprint(maxEntries)}, extra...)
		}
	}
	return []contender{
		{"floor-protobuf", e.opts.Self, child("floor")},
		{"floor-json", e.opts.Self, child("floor", "-json")},
		{"controller", e.opts.Self, child("controller")},
		{"pipeline", e.opts.Pipeline, func(pin, selector string) []string {
			return []string{"run", "--listen", "", "--log-level", "warn", e.flagship(pin, selector, maxEntries, false)}
		}},
	}
}

// flagship writes the flagship chain (kubernetes pods -> extract podIP ->
// [debounce ->] ebpf_map hash u32) to a file and returns its path.
func (e *Env) flagship(pin, selector string, maxEntries int, debounce bool) string {
	input := "transform.extract.ips"
	extra := ""
	if debounce {
		extra = "transform \"debounce\" \"batch\" {\n  input    = transform.extract.ips\n  interval = \"100ms\"\n}\n"
		input = "transform.debounce.batch"
	}
	cfg := fmt.Sprintf(`cluster "bench" {
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
%ssink "ebpf_map" "allowed" {
  input       = %s
  pin         = %q
  max_entries = %d
  key {
    type = "ipv4"
  }
  value {
    type = "u32"
    from = 1
  }
}
`, e.kubeconfig, e.ns, selector, extra, input, pin, maxEntries)
	e.configs++
	path := filepath.Join(e.dir, fmt.Sprintf("flagship-%d.hcl", e.configs))
	_ = os.WriteFile(path, []byte(cfg), 0o644)
	return path
}

// syncRun is one contender's run: time from process start to a full map,
// and its RSS one second later.
type syncRun struct {
	d   time.Duration
	rss float64
}

func (e *Env) runContender(ctx context.Context, c contender, selector string, want int) (syncRun, error) {
	pin := filepath.Join("/sys/fs/bpf", fmt.Sprintf("pipeline-bench-%d", os.Getpid()), c.name)
	_ = os.Remove(pin)
	defer os.Remove(pin)
	p, err := e.startProc(c.name, c.bin, c.args(pin, selector)...)
	if err != nil {
		return syncRun{}, err
	}
	defer p.stop()
	var r syncRun
	if want > 0 {
		full, err := waitFull(ctx, p, pin, want, samples(want, 8), 5*time.Minute)
		if err != nil {
			return r, fmt.Errorf("%s: %w", c.name, err)
		}
		r.d = full.Sub(p.start)
	}
	// RSS once settled: a second after the map is full (or after start,
	// when nothing matches).
	time.Sleep(time.Second)
	if err := p.exited(); err != nil {
		return r, err
	}
	r.rss, err = rssMB(p.cmd.Process.Pid, "VmRSS")
	return r, err
}

// initialSync measures P1 (process start to full pinned map: floor,
// hand-written controller, pipeline) and P4 (RSS added by the pods) with
// the contenders interleaved in each run.
func initialSync(ctx context.Context, e *Env) ([]Row, error) {
	n := e.opts.Pods
	p1 := fmt.Sprintf("initial sync, %d pods", n)
	if why := needRoot(); why != "" {
		return []Row{skipped("P1", p1, why), skipped("P4", "memory added by pods", why)}, nil
	}
	if _, err := os.Stat(e.opts.Pipeline); err != nil {
		return nil, fmt.Errorf("pipeline binary: %w (run make build)", err)
	}
	if err := e.kube(ctx); err != nil {
		return nil, err
	}
	defer os.RemoveAll(filepath.Join("/sys/fs/bpf", fmt.Sprintf("pipeline-bench-%d", os.Getpid())))
	cs := e.contenders(2 * n)
	times := map[string][]time.Duration{}
	added := map[string][]float64{}
	rss := map[string][]float64{}
	for run := range e.opts.Runs {
		for _, c := range cs {
			r, err := e.runContender(ctx, c, benchLabel, n)
			if err != nil {
				return nil, err
			}
			times[c.name] = append(times[c.name], r.d)
			rss[c.name] = append(rss[c.name], r.rss)
			if c.name != "controller" && c.name != "pipeline" {
				continue
			}
			zero, err := e.runContender(ctx, c, "app=none", 0)
			if err != nil {
				return nil, err
			}
			added[c.name] = append(added[c.name], r.rss-zero.rss)
		}
		e.logf("initial sync run %d/%d: floor %s, controller %s, pipeline %s", run+1, e.opts.Runs,
			times["floor-protobuf"][run].Round(time.Millisecond), times["controller"][run].Round(time.Millisecond),
			times["pipeline"][run].Round(time.Millisecond))
	}
	proto := measured("P1a", "floor: LIST (protobuf, rv=0) + one BatchUpdate", "ms", millis(times["floor-protobuf"]))
	js := measured("P1a'", "floor: LIST (JSON, rv=0) + one BatchUpdate", "ms", millis(times["floor-json"]))
	floor := proto
	if js.Median < proto.Median {
		floor = js
	}
	proto.Note, js.Note = "process start to full pinned map", "process start to full pinned map"
	hand := measured("P1b", "hand-written: typed informer -> workqueue -> Put", "ms", millis(times["controller"])).against(floor, "")
	pipe := measured("P1c", "pipeline run: kubernetes -> extract -> ebpf_map", "ms", millis(times["pipeline"])).against(floor, "<= 1.25x floor, < P1b")
	if hand.Median > 0 {
		pipe.Note = fmt.Sprintf("%.2fx the hand-written controller", pipe.Median/hand.Median)
	}
	handMem := measured("P4b", "RSS added by the pods: hand-written controller", "MB", added["controller"])
	handMem.Note = fmt.Sprintf("RSS %s MB with the pods", num(measured("", "", "", rss["controller"]).Median))
	pipeMem := measured("P4c", "RSS added by the pods: pipeline run (flagship, debounce off)", "MB", added["pipeline"]).against(handMem, "<= 0.30x P4b")
	pipeMem.Note = fmt.Sprintf("RSS %s MB with the pods", num(measured("", "", "", rss["pipeline"]).Median))
	return []Row{proto, js, hand, pipe, handMem, pipeMem}, nil
}
