package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// interruptGrace is how long a command that writes nothing (plan,
// validate) has to return after SIGINT or SIGTERM before the process
// exits anyway: loading and compiling a configuration are CPU-bound and
// do not look at a context.
const interruptGrace = 2 * time.Second

// interrupt is the signal handling of a command that writes nothing: the
// first SIGINT or SIGTERM cancels its context, and the command then ends
// with the conventional status, 128 plus the signal's number (130 for
// SIGINT, 143 for SIGTERM): when it returns within interruptGrace, through
// end; otherwise the process exits when the grace ends, and at once on a
// second signal. `run` does not use it: it shuts down gracefully.
type interrupt struct {
	ctx    context.Context
	cancel context.CancelFunc
	sigs   chan os.Signal
	stop   chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	got    os.Signal
}

// onInterrupt starts listening for SIGINT and SIGTERM for the command
// name; its context is ctx until one arrives. Call end when the command
// returns.
func onInterrupt(ctx context.Context, stderr io.Writer, name string, grace time.Duration) *interrupt {
	i := &interrupt{sigs: make(chan os.Signal, 2), stop: make(chan struct{})}
	i.ctx, i.cancel = context.WithCancel(ctx)
	signal.Notify(i.sigs, os.Interrupt, syscall.SIGTERM)
	i.wg.Go(func() {
		var sig os.Signal
		select {
		case sig = <-i.sigs:
		case <-i.stop:
			return
		}
		i.mu.Lock()
		i.got = sig
		i.mu.Unlock()
		i.cancel()
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-i.stop:
			return
		case <-timer.C:
		case <-i.sigs:
		}
		fmt.Fprintf(stderr, "Interrupted (%s): %s stopped, nothing written.\n", signalName(sig), name)
		os.Exit(signalStatus(sig))
	})
	return i
}

// Context is the command's context, cancelled by the first signal.
func (i *interrupt) Context() context.Context { return i.ctx }

// end stops listening and returns err, or, when a signal came, the
// signal's exit status in its place (what the command returned is then
// the interruption's doing).
func (i *interrupt) end(stderr io.Writer, name string, err error) error {
	signal.Stop(i.sigs)
	close(i.stop)
	i.wg.Wait()
	i.cancel()
	i.mu.Lock()
	sig := i.got
	i.mu.Unlock()
	if sig == nil {
		return err
	}
	fmt.Fprintf(stderr, "Interrupted (%s): %s stopped, nothing written.\n", signalName(sig), name)
	return exitError{signalStatus(sig)}
}

// signalStatus is the shell's status for a process ended by sig.
func signalStatus(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}

func signalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}
