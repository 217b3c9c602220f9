package main

import (
	"github.com/spf13/cobra"

	"github.com/pipeline/pipeline/cmd/pipeline/configtest"
)

func newTestCmd() *cobra.Command {
	var (
		asJSON bool
		run    string
	)
	cmd := &cobra.Command{
		Use:   "test [-json] [-run NAME] [PATH...]",
		Short: "Run the config tests (*.test.hcl) beside configurations",
		Long: "Runs every test block of the *.test.hcl files beside a configuration (a PATH is a configuration\n" +
			"directory, or one test file; none means the current directory). A test is a timeline: `given`\n" +
			"blocks feed a source (add, update, delete records) at a virtual time, `expect` blocks check what a\n" +
			"sink's target holds (state or keys, optionally the writes since the last check) at a virtual\n" +
			"time. The graph runs on the real engine and transforms with a virtual clock, so debounce and\n" +
			"grace periods pass in no real time, and sinks encode with their real encodings (a BPF map entry\n" +
			"is its bytes in hex) into memory: nothing touches a cluster, bpffs, NATS or a file.\n\n" +
			"Exit status: 0 every test passed, 1 a test failed, 2 a configuration or test file is invalid or\n" +
			"no test was found.",
		Example: "  pipeline test examples/flagship\n  pipeline test -json examples/* > results.json\n  pipeline test -run grace examples/flagship",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = []string{"."}
			}
			opts := configtest.Options{Load: loadForTest, Filter: run, JSON: asJSON}
			if code := configtest.RunPaths(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args, opts); code != 0 {
				return exitError{code}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the results as JSON")
	cmd.Flags().StringVar(&run, "run", "", "run only tests whose name contains this text")
	return cmd
}

// loadForTest is load for configtest.Run.
func loadForTest(paths, vars []string) configtest.Loaded {
	l := load(paths, vars)
	out := configtest.Loaded{Files: l.files, Graph: l.graph, Diags: l.diags}
	if l.cfg != nil {
		out.Sensitive = l.cfg.Sensitive
	}
	return out
}
