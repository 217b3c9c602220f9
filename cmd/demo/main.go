// Command demo runs the flagship job for real on this machine, for
// `make demo`: it starts a kube-apiserver and etcd built from Go modules
// (internal/kubeapitest), runs `pipeline run examples/demo` against it,
// creates backend pods with IPs, and shows their IPs arrive in a pinned eBPF
// map, a deleted pod's IP drained after the grace period, and a restart that
// writes nothing. It needs root (CAP_BPF) and a bpffs.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "\ndemo failed: %v\n", err)
		os.Exit(1)
	}
}

func say(format string, args ...any) {
	fmt.Printf("\n==> "+format+"\n", args...)
}

func run(ctx context.Context) error {
	d, err := setup(ctx)
	if err != nil {
		return err
	}
	defer d.teardown()
	steps := []func(context.Context) error{d.startPipeline, d.createPods, d.deletePod, d.relabelPod, d.restartWritesNothing}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return err
		}
	}
	say("done: the allow-list followed the cluster; the map stays pinned at %s", d.pin)
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
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
