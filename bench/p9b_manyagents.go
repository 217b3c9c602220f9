package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// manyAgents gives P9b: P9's hub with opts.Agents agents (1,000), packed
// opts.AgentsPerProc to a process by the agents program
// (bench/cmd/agents: one engine runtime per agent, each with its own NATS
// connection and pinned map, compiled as `pipeline run` compiles the
// agent's configuration). The rows: the p99 from a pod change to its entry
// in every agent's map (goal <= 500 ms), and the memory the agents add to
// the hub, whose embedded nats-server serves them: RSS measured once the
// hub is ready with no agent and again once every agent is synced, each
// time once the hub is idle (hubSettled), per agent. The hub's graph does no work
// per agent, so what grows is the server's.
func manyAgents(ctx context.Context, e *Env) ([]Row, error) {
	agents, per := e.opts.Agents, max(1, e.opts.AgentsPerProc)
	name := fmt.Sprintf("hub + %d agents, %d per process: pod change to every agent's map, p99", agents, per)
	memName := fmt.Sprintf("hub RSS added per agent (embedded nats-server), %d agents", agents)
	if why := needRoot(); why != "" {
		return []Row{skipped("P9b", name, why), skipped("P9c", memName, why)}, nil
	}
	load0 := loadAverage()
	h, err := e.hubFixture(ctx)
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	hub, err := e.startProc("pipeline-hub-b", e.opts.Pipeline, "run", "--listen", addr, "--log-level", "warn", e.hubConfig(h.port))
	if err != nil {
		return nil, err
	}
	defer hub.stop()
	client := &http.Client{Timeout: 10 * time.Second}
	if err := waitReady(ctx, client, hub, addr, 5*time.Minute); err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	hub0, _, err := e.hubSettled(ctx, client, hub, addr)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join("/sys/fs/bpf", fmt.Sprintf("pipeline-bench-p9b-%d", os.Getpid()))
	defer os.RemoveAll(dir)
	cfg := e.agentConfig()
	start := time.Now()
	var procs []*proc
	defer func() { stopAll(procs) }()
	for first := 0; first < agents; first += per {
		p, err := e.startProc(fmt.Sprintf("agents-%d", first), filepath.Join(filepath.Dir(e.opts.Pipeline), "agents"), "-n", strconv.Itoa(min(per, agents-first)),
			"-first", strconv.Itoa(first), "-var", "url=nats://127.0.0.1:"+strconv.Itoa(h.port), "-var", "pin_dir="+dir, cfg)
		if err != nil {
			return nil, err
		}
		procs = append(procs, p)
	}
	maps, err := waitAgents(ctx, procs, agents, per, dir, len(h.pods), h.current, 30*time.Minute)
	defer closeMaps(maps)
	if err != nil {
		return nil, err
	}
	synced := time.Since(start)
	e.logf("hub + %d agents in %d processes synced %d pods in %s", agents, len(procs), len(h.pods), synced.Round(time.Millisecond))
	hub1, settled, err := e.hubSettled(ctx, client, hub, addr)
	if err != nil {
		return nil, err
	}
	var agentsMB float64
	for _, p := range procs {
		mb, err := rssMB(p.cmd.Process.Pid, "VmRSS")
		if err != nil {
			return nil, err
		}
		agentsMB += mb
	}
	watchesAfter, err := e.oneWatchAdded(ctx, h, agents)
	if err != nil {
		return nil, err
	}
	hubCPU0, agentsCPU0 := cpuSeconds(hub), cpuSeconds(procs...)
	p50, p99, err := e.fanoutRuns(ctx, append(procs, hub), maps, h.pods, agents)
	if err != nil {
		return nil, err
	}
	// CPU per delivery: what a change costs the hub (its embedded server
	// sends it to each agent) and the agents, whatever the machine's load.
	deliveries := float64(e.opts.Runs * e.opts.Changes * agents)
	hubUS, agentsUS := (cpuSeconds(hub)-hubCPU0)*1e6/deliveries, (cpuSeconds(procs...)-agentsCPU0)*1e6/deliveries
	loads := load0 + " -> " + loadAverage()
	r := measured("P9b", name, "ms", p99)
	r.Goal = "<= 500 ms"
	r.Note = fmt.Sprintf("p50 %.1f ms; %d changes/run, %d pods; %d agent runtimes in %d processes (bench/cmd/agents), %.0f KB RSS per agent; CPU per change and agent: hub %.0f µs, agent %.0f µs; synced in %s; API server pod watches %v -> %v; load average %s",
		measured("", "", "", p50).Median, e.opts.Changes, len(h.pods), agents, len(procs), agentsMB*1024/float64(agents),
		hubUS, agentsUS, synced.Round(time.Second), h.watches, watchesAfter, loads)
	perAgent := func(a, b float64) float64 { return (b - a) * 1024 / float64(agents) }
	m := measured("P9c", memName, "KB", []float64{perAgent(hub0.rssMB, hub1.rssMB)})
	m.Note = fmt.Sprintf("hub RSS %.0f -> %.0f MB (no agent -> %d synced, each read once the hub was idle, %s after sync); Go heap in use %.0f -> %.0f MB (%.1f KB per agent); goroutines %.0f -> %.0f (%.1f per agent); one run",
		hub0.rssMB, hub1.rssMB, agents, settled.Round(time.Second), hub0.heapMB, hub1.heapMB, perAgent(hub0.heapMB, hub1.heapMB),
		hub0.goroutines, hub1.goroutines, (hub1.goroutines-hub0.goroutines)/float64(agents))
	e.logf("hub memory: %s", m.Note)
	return []Row{r, m}, nil
}

// stopAll stops the processes at once.
func stopAll(ps []*proc) {
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(p.stop)
	}
	wg.Wait()
}

// hubSettled reads the hub's memory once it is idle: right after it is
// ready or the last agent synced, it may still be sending or answering
// resent setup requests with its buffers full. It polls every 5 s until
// the hub used under 5% of a core over an interval, or 3 minutes passed,
// and says how long it waited.
func (e *Env) hubSettled(ctx context.Context, c *http.Client, hub *proc, addr string) (hubMem, time.Duration, error) {
	const every, limit = 5 * time.Second, 3 * time.Minute
	start := time.Now()
	for cpu := cpuSeconds(hub); time.Since(start) < limit; {
		select {
		case <-ctx.Done():
			return hubMem{}, 0, ctx.Err()
		case <-time.After(every):
		}
		busy := (cpuSeconds(hub) - cpu) / every.Seconds()
		if busy < 0.05 {
			break
		}
		cpu = cpuSeconds(hub)
	}
	m, err := e.hubMemory(c, hub, addr)
	return m, time.Since(start), err
}

// hubMem is what the hub holds at one time.
type hubMem struct{ rssMB, heapMB, goroutines float64 }

// hubMemory reads the hub's RSS and, from its /metrics, its Go heap in
// use and its goroutines.
func (e *Env) hubMemory(c *http.Client, hub *proc, addr string) (hubMem, error) {
	var m hubMem
	var err error
	if m.rssMB, err = rssMB(hub.cmd.Process.Pid, "VmRSS"); err != nil {
		return m, err
	}
	for _, g := range []struct {
		name string
		to   *float64
	}{{"go_memstats_heap_inuse_bytes ", &m.heapMB}, {"go_goroutines ", &m.goroutines}} {
		resp, err := c.Get("http://" + addr + "/metrics")
		if err != nil {
			return m, err
		}
		*g.to, err = sumSeries(resp.Body, g.name)
		resp.Body.Close()
		if err != nil {
			return m, err
		}
	}
	m.heapMB /= 1 << 20
	return m, nil
}

// waitReady polls /readyz until the run is ready.
func waitReady(ctx context.Context, c *http.Client, p *proc, addr string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		resp, err := c.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if err := p.exited(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s", limit)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// logTail returns the last n lines of a log file.
func logTail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// cpuSeconds is the CPU time (user and system) the processes have used.
func cpuSeconds(ps ...*proc) float64 {
	var ticks float64
	for _, p := range ps {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
		if err != nil {
			continue
		}
		// The fields after the command's closing parenthesis, from the state (field 3).
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 12 {
			u, _ := strconv.ParseFloat(f[11], 64)
			s, _ := strconv.ParseFloat(f[12], 64)
			ticks += u + s
		}
	}
	return ticks / 100 // USER_HZ
}

// loadAverage is the machine's 1-minute load average, as text.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}
