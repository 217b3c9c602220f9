package main

import (
	"context"
	"fmt"
	"os/exec"
)

// topSnapshot shows what `pipeline top` shows of the running job, once.
func (d *demo) topSnapshot(ctx context.Context) error {
	say("every node at a glance (pipeline top --count 1; live: pipeline top --against 127.0.0.1:19464, pipeline tap NODE)")
	cmd := exec.CommandContext(ctx, d.bin, "top", "--against", "127.0.0.1:19464", "--count", "1")
	cmd.Stdout, cmd.Stderr = prefixWriter("    "), prefixWriter("    ")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pipeline top: %w", err)
	}
	return nil
}
