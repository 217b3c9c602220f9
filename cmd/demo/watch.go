package main

import (
	"context"
	"fmt"
	"os/exec"
)

// topSnapshot shows what `pipeline top` shows of the running job, once.
func (d *demo) topSnapshot(ctx context.Context) error {
	say("every node at a glance (pipeline top --count 1; live: pipeline top --against %s, pipeline tap NODE)", demoListen)
	cmd := exec.CommandContext(ctx, d.bin, "top", "--against", demoListen, "--count", "1")
	cmd.Stdout, cmd.Stderr = prefixWriter("    "), prefixWriter("    ")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pipeline top: %w", err)
	}
	return nil
}
