package main

import (
	"github.com/spf13/cobra"

	"github.com/pipeline/pipeline/cmd/pipeline/schemadoc"
	"github.com/pipeline/pipeline/cmd/pipeline/view"
)

func newSchemaCmd() *cobra.Command {
	var asJSON, markdown bool
	cmd := &cobra.Command{
		Use:   "schema [--json | --markdown]",
		Short: "Print every registered block type with its attributes, types, defaults and docs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			doc := schemadoc.Describe(registry())
			switch {
			case asJSON:
				return view.WriteJSON(cmd.OutOrStdout(), doc)
			case markdown:
				schemadoc.WriteMarkdown(cmd.OutOrStdout(), doc)
			default:
				schemadoc.WriteText(cmd.OutOrStdout(), doc)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON (for editors and tools)")
	cmd.Flags().BoolVar(&markdown, "markdown", false, "print the reference docs as Markdown (make docs)")
	return cmd
}
