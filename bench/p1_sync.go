package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// contender is one way to fill the map from the pods: a process started
// fresh for every run. memory contenders are also measured for P4: their
// RSS a second and a while (Env.later) after the map is full, less that of
// the same program watching no pods.
type contender struct {
	name   string
	bin    string
	args   func(pin, selector string) []string
	env    []string // added to the benchmark's environment
	memory bool
}

func (e *Env) contenders(maxEntries int) []contender {
	own := func(extra ...string) func(pin, selector string) []string {
		return func(pin, selector string) []string {
			return append([]string{"-kubeconfig", e.kubeconfig, "-namespace", e.ns, "-selector", selector,
				"-pin", pin, "-max-entries", fmt.Sprint(maxEntries)}, extra...)
		}
	}
	run := func(readme bool) func(pin, selector string) []string {
		return func(pin, selector string) []string {
			return []string{"run", "--listen", "", "--log-level", "warn", e.flagship(pin, selector, maxEntries, readme)}
		}
	}
	cs := []contender{
		{name: "floor-protobuf", bin: e.contender("floor"), args: own()},
		{name: "floor-json", bin: e.contender("floor"), args: own("-json")},
		{name: "controller", bin: e.contender("controller"), args: own(), memory: true},
		{name: "controller-list", bin: e.contender("controller"), args: own(), env: []string{"KUBE_FEATURE_WatchListClient=false"}},
		{name: "pipeline", bin: e.opts.Pipeline, args: run(false)},
		{name: "pipeline-readme", bin: e.opts.Pipeline, args: run(true), memory: true},
	}
	if e.opts.Baseline != "" {
		cs = append(cs, contender{name: "pipeline-base", bin: e.opts.Baseline, args: run(false)})
	}
	return cs
}

// flagship writes the flagship chain to a file and returns its path: pods
// -> extract podIP -> ebpf_map hash u32; as the README shows it when
// readme is set, with each pod's name and namespace as the record's value,
// a debounce and a 30s grace period before the map.
func (e *Env) flagship(pin, selector string, maxEntries int, readme bool) string {
	return e.flagshipIn(e.ns, "", pin, selector, maxEntries, readme)
}

// flagshipIn is flagship on the pods of namespace ns, with more lines in
// the source's body.
func (e *Env) flagshipIn(ns, sourceExtra, pin, selector string, maxEntries int, readme bool) string {
	value, stages, input := "", "", "transform.extract.ips"
	if readme {
		value = "\n  value = { pod = object.metadata.name, namespace = object.metadata.namespace }"
		stages = `transform "debounce" "batch" {
  input    = transform.extract.ips
  interval = "100ms"
}
transform "grace_period" "drain" {
  input = transform.debounce.batch
  delay = "30s"
}
`
		input = "transform.grace_period.drain"
	}
	cfg := fmt.Sprintf(`cluster "bench" {
  kubeconfig = %q
}
source "kubernetes" "pods" {
  cluster   = cluster.bench
  resource  = "pods"
  namespace = %q
  selector  = %q%s
}
transform "extract" "ips" {
  input = source.kubernetes.pods
  where = try(object.status.podIP, "") != ""
  key   = object.status.podIP%s
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
`, e.kubeconfig, ns, selector, sourceExtra, value, stages, input, pin, maxEntries)
	e.configs++
	path := filepath.Join(e.dir, fmt.Sprintf("flagship-%d.hcl", e.configs))
	_ = os.WriteFile(path, []byte(cfg), 0o644)
	return path
}

// syncRun is one contender's run: time from process start to a full map,
// and its RSS one second and Env.later after that (the second only for
// memory contenders).
type syncRun struct {
	d          time.Duration
	cpu        float64 // processor ms the process used until the map was full
	rss, later float64
}

func (e *Env) runContender(ctx context.Context, c contender, selector string, want int) (syncRun, error) {
	pin := filepath.Join("/sys/fs/bpf", fmt.Sprintf("pipeline-bench-%d", os.Getpid()), c.name)
	_ = os.Remove(pin)
	defer os.Remove(pin)
	p, err := e.startProcEnv(c.name, c.bin, c.env, c.args(pin, selector)...)
	if err != nil {
		return syncRun{}, err
	}
	defer p.stop()
	var r syncRun
	settled := time.Now()
	if want > 0 {
		full, err := waitFull(ctx, p, pin, want, samples(want, 8), 5*time.Minute)
		if err != nil {
			return r, fmt.Errorf("%s: %w", c.name, err)
		}
		r.d, settled = full.Sub(p.start), full
		if r.cpu, err = cpuMillis(p.cmd.Process.Pid); err != nil {
			return r, err
		}
	}
	// RSS once settled: a second after the map is full (or after start,
	// when nothing matches), and for memory contenders again later.
	pid := p.cmd.Process.Pid
	if r.rss, err = e.rssAt(p, pid, settled.Add(time.Second)); err != nil || !c.memory {
		return r, err
	}
	r.later, err = e.rssAt(p, pid, settled.Add(e.later()))
	return r, err
}

// later is when P4 reads the memory a second time after the map is full:
// 10 s, 2 s in a smoke run.
func (e *Env) later() time.Duration {
	if e.opts.Smoke {
		return 2 * time.Second
	}
	return 10 * time.Second
}

// rssAt waits until t and reads the process's RSS.
func (e *Env) rssAt(p *proc, pid int, t time.Time) (float64, error) {
	time.Sleep(time.Until(t))
	if err := p.exited(); err != nil {
		return 0, err
	}
	return rssMB(pid, "VmRSS")
}

// initialSync measures P1 (process start to full pinned map: floor,
// hand-written controller, pipeline) and P4 (RSS added by the pods: the
// hand-written controller and the flagship chain as the README shows it)
// with the contenders interleaved in each run.
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
	added, addedLater, rss, cpu := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	for run := range e.opts.Runs {
		for _, c := range cs {
			r, err := e.runContender(ctx, c, benchLabel, n)
			if err != nil {
				return nil, err
			}
			times[c.name] = append(times[c.name], r.d)
			cpu[c.name] = append(cpu[c.name], r.cpu)
			rss[c.name] = append(rss[c.name], r.rss)
			if !c.memory {
				continue
			}
			zero, err := e.runContender(ctx, c, "app=none", 0)
			if err != nil {
				return nil, err
			}
			added[c.name] = append(added[c.name], r.rss-zero.rss)
			addedLater[c.name] = append(addedLater[c.name], r.later-zero.later)
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
	proto.Note, js.Note = "own program, process start to full pinned map", "own program, process start to full pinned map"
	hand := measured("P1b", "hand-written: typed informer -> workqueue -> Put", "ms", millis(times["controller"])).against(floor, "")
	hand.Note = "own program; client-go's defaults: JSON, watch-list initial sync"
	handList := measured("P1b'", "hand-written as P1b, its initial sync a LIST (KUBE_FEATURE_WatchListClient=false)", "ms",
		millis(times["controller-list"])).against(floor, "")
	handList.Note = "own program; JSON"
	faster := hand
	if handList.Median < hand.Median {
		faster = handList
	}
	pipe := measured("P1c", "pipeline run: kubernetes -> extract -> ebpf_map", "ms", millis(times["pipeline"])).against(floor, "<= 1.0x floor, < P1b and P1b'")
	if faster.Median > 0 {
		pipe.Note = fmt.Sprintf("%.2fx the faster hand-written controller (%s)", pipe.Median/faster.Median, faster.ID)
	}
	readme := measured("P1d", "pipeline run: the README's flagship chain (value, debounce, grace_period)", "ms",
		millis(times["pipeline-readme"])).against(floor, "")
	readme.Note = "debounce 100ms included"
	rows := []Row{proto, js, hand, handList, pipe, readme}
	if e.opts.Baseline != "" {
		base := measured("P1c-base", "baseline pipeline run (-baseline), same chain", "ms", millis(times["pipeline-base"])).against(floor, "")
		base.Note = fmt.Sprintf("P1c / P1c-base %.2fx", pipe.Median/base.Median)
		rows = append(rows, base)
	}
	rows = append(rows, cpuRows(cpu, e.opts.Baseline != "")...)
	later := e.later().String()
	for _, at := range []struct {
		id, when string
		added    map[string][]float64
	}{{"", "1s", added}, {"'", later, addedLater}} {
		handMem := measured("P4b"+at.id, "RSS added by the pods, "+at.when+" after sync: hand-written controller", "MB", at.added["controller"])
		handMem.Note = perPod(handMem.Median, n)
		pipeMem := measured("P4c"+at.id, "RSS added by the pods, "+at.when+" after sync: pipeline, README flagship chain", "MB",
			at.added["pipeline-readme"]).against(handMem, "<= 0.15x P4b"+at.id)
		pipeMem.Note = perPod(pipeMem.Median, n)
		rows = append(rows, handMem, pipeMem)
	}
	return rows, nil
}

// cpuRows are P1's processor times: what each contender's process used
// from its start to the full map, which the machine's load moves less
// than the wall-clock times (10 ms ticks).
func cpuRows(cpu map[string][]float64, base bool) []Row {
	ref := measured("P1a-cpu", "", "ms", cpu["floor-protobuf"])
	if js := measured("P1a'-cpu", "", "ms", cpu["floor-json"]); js.Median < ref.Median {
		ref = js
	}
	var rows []Row
	for _, c := range []struct{ id, name, key string }{
		{"P1a-cpu", "processor time to a full map: floor, protobuf", "floor-protobuf"},
		{"P1a'-cpu", "processor time to a full map: floor, JSON", "floor-json"},
		{"P1b-cpu", "processor time to a full map: hand-written, watch-list", "controller"},
		{"P1b'-cpu", "processor time to a full map: hand-written, LIST", "controller-list"},
		{"P1c-cpu", "processor time to a full map: pipeline run", "pipeline"},
		{"P1c-base-cpu", "processor time to a full map: baseline pipeline run", "pipeline-base"},
	} {
		if c.key == "pipeline-base" && !base {
			continue
		}
		r := measured(c.id, c.name, "ms", cpu[c.key])
		if c.id != ref.ID {
			r = r.against(ref, "")
		}
		rows = append(rows, r)
	}
	return rows
}

// perPod states an RSS rise per pod.
func perPod(mb float64, pods int) string {
	if pods == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f KB per pod", mb*1024/float64(pods))
}
