package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/pipeline/pipeline/cmd/pipeline/inspect"
)

func newTapCmd() *cobra.Command {
	var f inspect.TapOptions
	cmd := &cobra.Command{
		Use:   "tap [--against ADDR] [--json] [--rate N] [--sample N] NODE...",
		Short: "Stream the deltas of running nodes live",
		Long: "Connects to a running `pipeline run` (its --listen address) and prints every delta of the named\n" +
			"nodes as it happens: for a source or transform, each change of its output; for a sink, each entry\n" +
			"its target applied (a BPF map entry as its bytes in hex). Sensitive values are masked.\n" +
			"--rate caps lines per second (the rest are counted in a `skipped` line each second), --sample N\n" +
			"keeps every Nth delta. A client that falls behind loses events (counted too); the pipeline never\n" +
			"waits for a tap, and a node nobody taps pays one atomic check per batch.",
		Example: "  pipeline tap sink.ebpf_map.allowed\n" +
			"  pipeline tap --against 10.0.0.5:9464 --json --sample 10 source.kubernetes.pods",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("tap needs a node address such as sink.ebpf_map.allowed (see `pipeline graph`)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return inspect.Tap(ctx, cmd.OutOrStdout(), args, f)
		},
	}
	cmd.Flags().StringVar(&f.Against, "against", "127.0.0.1:9464", "admin address of the running pipeline (its --listen)")
	cmd.Flags().BoolVar(&f.JSON, "json", false, "print JSON lines instead of the readable form")
	cmd.Flags().IntVar(&f.Rate, "rate", 100, "lines per second at most; 0 for no cap")
	cmd.Flags().IntVar(&f.Sample, "sample", 1, "keep every Nth delta")
	cmd.Flags().IntVar(&f.Count, "count", 0, "stop after this many deltas; 0 runs until interrupted")
	return cmd
}
