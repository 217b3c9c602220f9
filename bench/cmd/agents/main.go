// Command agents runs many pipeline agents in one process, for the hub and
// 1,000 agents row of the performance table (P9b in docs/performance.md).
// A real deployment runs one agent per node (`pipeline run`); a test
// machine cannot hold 1,000 such processes, so this program packs them.
//
// Each agent is its own engine runtime, compiled from PATH... exactly as
// `pipeline run -var agent=I PATH...` compiles it (the same loader, the
// same graph.Compile, the node types an agent uses), with its own NATS
// connection, its own pinned map, its own logger (agent=I) and its own
// metrics registry. What it leaves out of `pipeline run`: the HTTP server
// (as `--listen ""`), reload on file change, and the leader election.
//
//	agents -n 100 -first 200 -var url=nats://127.0.0.1:4222 -var pin_dir=/sys/fs/bpf/x agent.hcl
//
// runs agents 200..299. It prints "ready N" once every agent is ready (as
// /readyz says it) and runs until SIGINT or SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
	"github.com/pipeline/pipeline/sinks/ebpfmap"
	logsink "github.com/pipeline/pipeline/sinks/log"
	natskvsource "github.com/pipeline/pipeline/sources/natskv"
	"github.com/pipeline/pipeline/transforms/debounce"
	"github.com/pipeline/pipeline/transforms/filter"
	"github.com/pipeline/pipeline/transforms/graceperiod"
)

type varFlags []string

func (v *varFlags) String() string     { return strings.Join(*v, " ") }
func (v *varFlags) Set(s string) error { *v = append(*v, s); return nil }

func main() {
	n := flag.Int("n", 1, "agents in this process")
	first := flag.Int("first", 0, "index of the first agent (var.agent)")
	level := flag.String("log-level", "warn", "log level: debug, info, warn or error")
	var vars varFlags
	flag.Var(&vars, "var", "set a variable of every agent: -var name=value (repeatable)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stopProfile := cpuProfile()
	err := run(ctx, *n, *first, *level, vars, flag.Args())
	stopProfile()
	if err != nil {
		fmt.Fprintln(os.Stderr, "agents:", err)
		os.Exit(1)
	}
}

// cpuProfile profiles the CPU from now to the returned function's call
// into the file PIPELINE_CPUPROFILE names, as `pipeline run` does.
func cpuProfile() func() {
	path := os.Getenv("PIPELINE_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "agents: CPU profile:", err)
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

// registry holds the node types an agent configuration uses.
func registry() *node.Registry {
	return node.NewRegistry(natskvsource.Spec(), filter.Spec(), debounce.Spec(), graceperiod.Spec(), ebpfmap.Spec(), logsink.Spec())
}

func run(ctx context.Context, n, first int, level string, vars, paths []string) error {
	if len(paths) == 0 {
		return fmt.Errorf("give the agent configuration's PATH")
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	base := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))
	reg := registry()
	rts := make([]*engine.Runtime, n)
	for i := range n {
		agent := first + i
		cfg, diags := schema.NewLoader().Load(paths, schema.Options{Vars: append(vars[:len(vars):len(vars)], fmt.Sprintf("agent=%d", agent))})
		if !diags.HasErrors() {
			var g *graph.Graph
			g, diags = graph.Compile(cfg, reg)
			if !diags.HasErrors() {
				m := engine.NewMetrics(prometheus.NewRegistry(), "bench")
				m.SetGeneration(1)
				var err error
				if rts[i], err = engine.NewRuntime(g, engine.RunOptions{Logger: base.With("agent", agent), Metrics: m}); err != nil {
					return fmt.Errorf("agent %d: %w", agent, err)
				}
				continue
			}
		}
		return fmt.Errorf("agent %d: %w", agent, diags)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for i, rt := range rts {
		wg.Go(func() {
			if err := rt.Run(ctx); err != nil {
				cancel(fmt.Errorf("agent %d: %w", first+i, err))
			}
		})
	}
	start := time.Now()
	ready(ctx, rts)
	if ctx.Err() == nil {
		fmt.Printf("ready %d in %s\n", n, time.Since(start).Round(time.Millisecond))
	}
	<-ctx.Done()
	wg.Wait()
	if err := context.Cause(ctx); err != ctx.Err() {
		return err
	}
	return nil
}

// ready returns once every runtime is ready or ctx ends.
func ready(ctx context.Context, rts []*engine.Runtime) {
	for i := 0; i < len(rts); {
		if rts[i].Readiness().Ready {
			i++
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}
