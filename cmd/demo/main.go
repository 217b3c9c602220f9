// Command demo runs the flagship job for real on this machine, for
// `make demo`: it starts a kube-apiserver and etcd built from Go modules
// (internal/kubeapitest), runs `pipeline run examples/demo` against it,
// creates backend pods with IPs, and shows their IPs arrive in a pinned eBPF
// map, a deleted pod's IP drained after the grace period, and a restart that
// writes nothing. As root (CAP_BPF) it programs a real pinned map; otherwise
// it runs examples/demo-unprivileged, where a log sink replaces the map. At
// the end, or on Ctrl-C, it removes what it created unless -keep is given.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	keep := flag.Bool("keep", false, "keep the API server's data (.cache/demo) and the pinned map after the demo")
	flag.StringVar(&demoListen, "listen", envOr("DEMO_LISTEN", demoListen), "admin endpoint of the demo's pipeline (env DEMO_LISTEN)")
	flag.StringVar(&agentListen, "agent-listen", envOr("DEMO_AGENT_LISTEN", agentListen), "admin endpoint of the demo's agent (env DEMO_AGENT_LISTEN)")
	flag.StringVar(&demoNATS, "nats", envOr("DEMO_NATS", demoNATS), "address of the hub's embedded NATS server (env DEMO_NATS)")
	flag.Parse()
	if err := portsFree(); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, *keep)
	switch {
	case err != nil && ctx.Err() != nil:
		fmt.Fprintln(os.Stderr, "\ndemo interrupted; what it started is stopped and removed")
		os.Exit(130)
	case err != nil:
		fmt.Fprintf(os.Stderr, "\ndemo failed: %v\n", err)
		os.Exit(1)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// portsFree checks that the demo's addresses are free, naming the flag and
// variable that move one that is taken.
func portsFree() error {
	for _, p := range []struct{ addr, flag, env string }{
		{demoListen, "-listen", "DEMO_LISTEN"}, {agentListen, "-agent-listen", "DEMO_AGENT_LISTEN"}, {demoNATS, "-nats", "DEMO_NATS"}} {
		l, err := net.Listen("tcp", p.addr)
		if err != nil {
			return fmt.Errorf("%s is taken (%v): another demo or pipeline may be running; stop it, or choose another address: make demo %s=127.0.0.1:PORT (bin/demo %s 127.0.0.1:PORT)", p.addr, err, p.env, p.flag)
		}
		l.Close()
	}
	return nil
}

func say(format string, args ...any) {
	fmt.Printf("\n==> "+format+"\n", args...)
}

func run(ctx context.Context, keep bool) (err error) {
	d, err := setup(ctx)
	if err != nil {
		return err
	}
	defer func() { d.teardown(keep || (err != nil && ctx.Err() == nil)) }()
	steps := []func(context.Context) error{d.createPods, d.planFirst, d.startPipeline, d.podsAllowed, d.topSnapshot, d.startAgentStep, d.deletePod, d.relabelPod, d.agentFollowed, d.liveEdit, d.consoleShot}
	if d.ebpf {
		steps = append(steps, d.restartWritesNothing)
	}
	steps = append(steps, d.haproxyStep, d.gatewayStep, d.namespacePolicies, d.resourceMetrics, d.verifyAudit)
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return err
		}
	}
	if d.ebpf {
		say("done: the allow-list in the pinned map followed the cluster")
		fmt.Printf("    to look at it yourself, keep it (make demo KEEP=1) and run: bpftool map dump pinned %s\n", d.pin)
	} else {
		say("done: the allow-list followed the cluster (the log sink wrote its changes as JSON lines)")
		fmt.Println("    as root (sudo make demo) the same job programs a pinned eBPF map, and a restart shows it writes nothing")
	}
	return nil
}

// waitFor polls cond every 50ms until it holds or the timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			return fmt.Errorf("%s: not after %s", what, timeout)
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("%s", what), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
