package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// launched is a pipeline run started by a test.
type launched struct {
	addr   string             // where /metrics, /healthz and /readyz answer
	stderr nodetest.LogBuffer // its logs (json, info), read while the run writes them
	cancel context.CancelFunc
	done   chan error
}

// launch writes src to dir/p.hcl and runs the pipeline on it, logging json
// at info, until stop; it fails t when the run ends before it listens.
func launch(t *testing.T, dir, src string) *launched {
	t.Helper()
	cfg := filepath.Join(dir, "p.hcl")
	if err := os.WriteFile(cfg, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &launched{cancel: cancel, done: make(chan error, 1)}
	addrc := make(chan string, 1)
	go func() {
		r.done <- runPipeline(ctx, io.Discard, &r.stderr, []string{cfg}, runFlags{listen: "127.0.0.1:0", logFormat: "json",
			logLevel: "info", onListen: func(a string) { addrc <- a }})
	}()
	select {
	case r.addr = <-addrc:
	case err := <-r.done:
		cancel()
		t.Fatalf("run ended early: %v\n%s", err, r.stderr.String())
	}
	return r
}

// stop ends the run and returns its error.
func (r *launched) stop() error {
	r.cancel()
	return <-r.done
}

// startRun runs the pipeline in dir with src and returns the address it
// listens on and a stop function that fails t when the run failed.
func startRun(t *testing.T, dir, src string) (addr string, stop func()) {
	t.Helper()
	r := launch(t, dir, src)
	return r.addr, func() {
		if err := r.stop(); err != nil {
			t.Errorf("run: %v", err)
		}
	}
}

// missingInCI skips t for a missing prerequisite, or fails it under CI
// (the CI variable set), which runs as root with everything installed: a
// skip there would prove nothing.
func missingInCI(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("cannot run in CI: "+format, args...)
	}
	t.Skipf("skipping: "+format, args...)
}
