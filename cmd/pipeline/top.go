package main

import (
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline/pipeline/cmd/pipeline/inspect"
)

func newTopCmd() *cobra.Command {
	var f inspect.TopOptions
	cmd := &cobra.Command{
		Use:   "top [--against ADDR] [--interval 1s]",
		Short: "Watch every node's rates, queues and health live",
		Long: "Reads /metrics and /readyz of a running `pipeline run` (its --listen address) every --interval and\n" +
			"shows one row per node: health, records held, deltas in and out per second, input queue depth,\n" +
			"overflow resyncs, restarts, and for sinks the mean change latency and write errors per second\n" +
			"over the last interval. On a terminal the view is redrawn in place with colours (NO_COLOR turns\n" +
			"them off); otherwise each refresh prints plain lines, so `pipeline top --count 1` is a snapshot.",
		Example: "  pipeline top\n  pipeline top --against 10.0.0.5:9464 --interval 5s\n  pipeline top --count 1 > now.txt",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return inspect.Top(ctx, cmd.OutOrStdout(), f)
		},
	}
	cmd.Flags().StringVar(&f.Against, "against", "127.0.0.1:9464", "admin address of the running pipeline (its --listen)")
	cmd.Flags().DurationVar(&f.Interval, "interval", time.Second, "time between refreshes")
	cmd.Flags().IntVar(&f.Count, "count", 0, "stop after this many refreshes; 0 runs until interrupted")
	return cmd
}
