package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newValidateCmd() *cobra.Command {
	var asJSON bool
	var vars []string
	cmd := &cobra.Command{
		Use:   "validate [-json] [-var name=value]... PATH...",
		Short: "Check configuration files; exit 0 when valid, 1 when not",
		Long: "Parses the files (a directory contributes its *.hcl files), evaluates variables, and compiles the graph " +
			"without touching any cluster, map or server. Every problem is reported at once with file:line:col.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l := load(args, vars)
			if asJSON {
				if err := writeJSON(cmd.OutOrStdout(), validateJSON(l.files, l.diags)); err != nil {
					return err
				}
			} else {
				writeDiagsText(cmd.ErrOrStderr(), l.files, l.diags)
				if !l.diags.HasErrors() {
					fmt.Fprintf(cmd.OutOrStdout(), "Success! The configuration is valid (%d nodes).\n", len(l.graph.Nodes))
				}
			}
			if l.diags.HasErrors() {
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print diagnostics as JSON, in the format of terraform validate -json")
	cmd.Flags().StringArrayVar(&vars, "var", nil, "set a variable: -var name=value (repeatable); PIPELINE_VAR_name also works")
	return cmd
}
