package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/cilium/ebpf"
)

// planRows gives P6: `pipeline plan --json` of the flagship chain against
// a pinned map holding every pod's IP but 1% (the drift it must find),
// process start to exit, against the floor: a program of its own
// (bench/contenders/planfloor) that LISTs the pods and reads the whole map
// with BatchLookup, then exits. Both run interleaved, each a fresh process
// per run.
func planRows(ctx context.Context, e *Env) ([]Row, error) {
	n := e.opts.Pods
	name := fmt.Sprintf("plan of the flagship chain, %d pods, 1%% drift", n)
	if why := needRoot(); why != "" {
		return []Row{skipped("P6", name, why)}, nil
	}
	if _, err := os.Stat(e.opts.Pipeline); err != nil {
		return nil, fmt.Errorf("pipeline binary: %w (run make build)", err)
	}
	if err := e.kube(ctx); err != nil {
		return nil, err
	}
	dir := filepath.Join("/sys/fs/bpf", fmt.Sprintf("pipeline-bench-%d", os.Getpid()))
	defer os.RemoveAll(dir)
	pin := filepath.Join(dir, "plan")
	cfg := e.flagship(pin, benchLabel, 2*n, false)
	if err := e.fillForPlan(ctx, cfg, pin, n); err != nil {
		return nil, err
	}
	var floor, plan []time.Duration
	for run := range e.opts.Runs {
		f, err := e.timeProc(ctx, "plan-floor", e.contender("planfloor"), "-kubeconfig", e.kubeconfig, "-namespace", e.ns,
			"-selector", benchLabel, "-pin", pin)
		if err != nil {
			return nil, err
		}
		p, err := e.timeProc(ctx, "plan", e.opts.Pipeline, "plan", "--json", "--log-level", "error", cfg)
		if err != nil {
			return nil, err
		}
		floor, plan = append(floor, f), append(plan, p)
		e.logf("plan run %d/%d: floor %s, plan %s", run+1, e.opts.Runs, f.Round(time.Millisecond), p.Round(time.Millisecond))
	}
	fl := measured("P6a", fmt.Sprintf("floor: LIST of %d pods + BatchLookup of the map", n), "ms", millis(floor))
	fl.Note = "process start to exit"
	pl := measured("P6", name, "ms", millis(plan)).against(fl, "<= 1.5x floor")
	pl.Note = "pipeline plan --json, process start to exit (status 2)"
	return []Row{fl, pl}, nil
}

// fillForPlan lets `pipeline run` fill the map with every pod's IP, stops
// it, and deletes 1% of the entries (at least one).
func (e *Env) fillForPlan(ctx context.Context, cfg, pin string, n int) error {
	p, err := e.startProc("plan-fill", e.opts.Pipeline, "run", "--listen", "", "--log-level", "warn", cfg)
	if err != nil {
		return err
	}
	_, err = waitFull(ctx, p, pin, n, samples(n, 8), 5*time.Minute)
	p.stop()
	if err != nil {
		return fmt.Errorf("fill the map for plan: %w", err)
	}
	m, err := ebpf.LoadPinnedMap(pin, nil)
	if err != nil {
		return err
	}
	defer m.Close()
	for i := 0; i < n; i += 100 {
		if err := m.Delete(podIP(i)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("drift: %w", err)
		}
	}
	return nil
}

// timeProc runs bin to its end and returns the time from just before the
// fork to its exit; exit status 2 (plan: changes) counts as success.
func (e *Env) timeProc(ctx context.Context, name, bin string, args ...string) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 2) {
		if len(out) > 600 {
			out = out[len(out)-600:]
		}
		return 0, fmt.Errorf("%s: %w: %s", name, err, out)
	}
	return d, nil
}
