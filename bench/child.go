package bench

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Child runs the in-process contender the table measures (the benchtable
// program re-runs itself with these arguments, so it is a fresh process):
//
//	churn FLAGS  P3: updates through extract -> debounce -> ebpf_map in this process, a JSON result on stdout
//
// The floor and the hand-written controller are programs of their own
// (bench/contenders), so that they do not pay this program's start-up.
// It reports whether args named a child.
func Child(args []string) (bool, error) {
	if len(args) == 0 || args[0] != "churn" {
		return false, nil
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	return true, churnChild(ctx, args[1:])
}
