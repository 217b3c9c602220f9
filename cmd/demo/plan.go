package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// planFirst runs `pipeline plan` before the job ever ran: it lists the
// three backend IPs the map would get (a map it would create), and writes
// nothing, which the step checks.
func (d *demo) planFirst(ctx context.Context) error {
	say("planning before running: pipeline plan reads the cluster and every target, and writes nothing")
	config, err := d.configArgs()
	if err != nil {
		return err
	}
	args := append([]string{"plan"}, config...)
	fmt.Printf("    $ pipeline %s\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, d.bin, args...)
	cmd.Stdout, cmd.Stderr = prefixWriter("    | "), prefixWriter("    | ")
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 2:
		fmt.Println("    exit status 2: changes to make")
	case err == nil:
		fmt.Println("    exit status 0: nothing to change")
	default:
		return fmt.Errorf("pipeline plan: %w", err)
	}
	if d.ebpf {
		if _, err := os.Stat(d.pin); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("plan created %s (%v)", d.pin, err)
		}
		fmt.Println("    the pinned map is still absent: plan created nothing")
	}
	return nil
}
