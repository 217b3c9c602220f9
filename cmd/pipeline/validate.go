package main

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/hashicorp/hcl/v2"

	"github.com/spf13/cobra"

	"github.com/pipeline/pipeline/cmd/pipeline/view"
)

func newValidateCmd() *cobra.Command {
	var asJSON, withFiles bool
	var vars []string
	cmd := &cobra.Command{
		Use:   "validate [-json] [-var name=value]... PATH...",
		Short: "Check configuration files; exit 0 when valid, 1 when not",
		Long: "Parses, evaluates variables and compiles the graph without touching any cluster, map or server. " +
			"Every problem is reported at once with file:line:col. Each PATH is validated as its own configuration: " +
			"a file, or a directory whose *.hcl files merge into one (so `pipeline validate examples/*` checks " +
			"every example separately). run and graph merge all their PATHs into one configuration.\n\n" +
			"Files the configuration names are not read, so validate passes in CI where secrets are not mounted; " +
			"--check-files reads them as a run would: each cluster's kubeconfig, ca_cert and token_file, " +
			"and the files of every files source (a pattern must match, each file must parse).\n\n" +
			"Interrupted (SIGINT, SIGTERM), validate exits with 130 or 143 within 2s, even while a configuration loads.",
		Args: needPaths(),
		RunE: func(cmd *cobra.Command, args []string) error {
			in := onInterrupt(cmd.Context(), cmd.ErrOrStderr(), "validate", interruptGrace)
			err := validatePaths(in.Context(), cmd, args, vars, asJSON, withFiles)
			return in.end(cmd.ErrOrStderr(), "validate", err)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print diagnostics as JSON, in the format of terraform validate -json")
	cmd.Flags().BoolVar(&withFiles, "check-files", false, "also read the files a run reads (cluster credentials, files sources' files) and report what is missing or broken")
	cmd.Flags().StringArrayVar(&vars, "var", nil, "set a variable: -var name=value (repeatable); PIPELINE_VAR_name also works")
	return cmd
}

// validatePaths validates each path as its own configuration, until ctx
// is cancelled.
func validatePaths(ctx context.Context, cmd *cobra.Command, args, vars []string, asJSON, withFiles bool) error {
	files := map[string]*hcl.File{}
	var all hcl.Diagnostics
	seen := map[string]bool{}
	for _, path := range args {
		if err := ctx.Err(); err != nil {
			return err
		}
		l := load([]string{path}, vars)
		if withFiles && l.cfg != nil && !l.diags.HasErrors() {
			l.diags = append(l.diags, checkFiles(l.cfg, l.graph)...)
			maskDiagnostics(l.diags, l.cfg)
		}
		maps.Copy(files, l.files)
		// An option error (-var) has no position and would repeat per path.
		l.diags = slices.DeleteFunc(l.diags, func(d *hcl.Diagnostic) bool {
			key := d.Summary + "\x00" + d.Detail
			dup := d.Subject == nil && seen[key]
			seen[key] = seen[key] || d.Subject == nil
			return dup
		})
		all = append(all, l.diags...)
		if !asJSON {
			view.WriteDiagsText(cmd.ErrOrStderr(), l.files, l.diags)
			if !l.diags.HasErrors() {
				fmt.Fprintf(cmd.OutOrStdout(), "Success! %s is valid (%d nodes).\n", view.Printable(path), len(l.graph.Nodes))
			}
		}
	}
	if asJSON {
		if err := view.WriteJSON(cmd.OutOrStdout(), view.ValidateJSON(files, all)); err != nil {
			return err
		}
	}
	if all.HasErrors() {
		return exitError{1}
	}
	return nil
}
