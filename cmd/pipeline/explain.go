package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline/pipeline/cmd/pipeline/admin"
	"github.com/pipeline/pipeline/cmd/pipeline/inspect"
)

func newExplainCmd() *cobra.Command {
	var against string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "explain [--against ADDR] [--json] KEY",
		Short: "Ask a running instance why KEY is, or is not, in its sinks",
		Long: "explain asks a running `pipeline run` (its read-only admin endpoint, --listen) about KEY: the sink\n" +
			"entries that want or hold it, each with what the sink wants, what it last wrote, and what the target\n" +
			"holds at KEY (read for this answer, with the time of the read); the status compares the want with\n" +
			"that read: applied, wanted and not in the target (with the last error of a refused write), waiting\n" +
			"for sync, .... It shows where the record came from (the object or file:line), its value at each\n" +
			"stage, and a pending grace-period deletion with its due time. For a key no sink holds it shows where\n" +
			"the record stops and which selectors and conditions decide what reaches the sinks.\n\n" +
			"Exit status: 0 when a sink holds or wants KEY, 2 when none does, 1 on error.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 15*time.Second)
			defer cancel()
			body, err := inspect.FetchExplain(ctx, against, args[0])
			if err != nil {
				return err
			}
			var v admin.Explanation
			if err := json.Unmarshal(body, &v); err != nil {
				return fmt.Errorf("explain: read answer from %s: %w", against, err)
			}
			if asJSON {
				_, _ = cmd.OutOrStdout().Write(body)
			} else {
				inspect.WriteExplain(cmd.OutOrStdout(), v, time.Now())
			}
			if v.Absent {
				return exitError{2}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&against, "against", "127.0.0.1:9464", "admin address of the running pipeline (its --listen), or a URL")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the answer as JSON")
	return cmd
}
