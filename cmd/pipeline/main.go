// Command pipeline runs declarative pipelines: HCL files declaring sources,
// transforms and sinks that the engine keeps in sync. This package is the
// CLI: the cobra commands with their flags and exit codes, the loader,
// and `pipeline run` with its reloads. It is the only place that lists
// every node type (nodes.go). What a command shows or serves lives in a
// package of its own beside it: view (what every view shares), planview,
// inspect (explain, tap, top), admin (the endpoint of --listen),
// schemadoc, configtest (`pipeline test`), lsp and console.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pipeline/pipeline/cmd/pipeline/view"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// version is set with -ldflags "-X main.version=...".
var version = "dev"

// exitError carries an exit code without printing anything more.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(normalizeArgs(args))
	stopProfiles := startProfiles(stderr)
	err := root.Execute()
	stopProfiles()
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	default:
		fmt.Fprintf(stderr, "Error: %s\n", view.Printable(err.Error()))
		return 1
	}
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "pipeline",
		Short: "Keep eBPF maps, NATS and audit trails in sync with Kubernetes, declared in HCL",
		Long:  rootLong(registry()),
		Example: "  pipeline validate examples/*                  check every example, each on its own\n" +
			"  pipeline graph examples/flagship | dot -Tsvg  draw a configuration's graph\n" +
			"  pipeline run -var kubeconfig=~/.kube/config examples/demo\n" +
			"                                                run it, serving /metrics and /readyz on 127.0.0.1:9464\n" +
			"  pipeline schema                               every node type with its attributes",
		Version:          version,
		SilenceUsage:     true,
		SilenceErrors:    true,
		PersistentPreRun: tuneGC,
	}
	root.SetVersionTemplate("pipeline {{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newValidateCmd(), newFmtCmd(), newGraphCmd(), newSchemaCmd(), newRunCmd(), newPlanCmd(), newManifestsCmd(), newAuditCmd(), newExplainCmd(), newTapCmd(), newTopCmd(), newConsoleCmd(), newTestCmd(), newLSPCmd(), newVersionCmd())
	return root
}

// rootLong is the root command's description. The node types come from
// the registry, so the help names every type this build has.
func rootLong(reg *node.Registry) string {
	var kinds []string
	for _, k := range schema.Kinds {
		kinds = append(kinds, fmt.Sprintf("%ss (%s)", k, strings.Join(reg.Types(k), ", ")))
	}
	intro := "pipeline runs declarative pipelines: HCL files declaring " + kinds[0] + ", " +
		strings.Join(kinds[1:len(kinds)-1], ", ") + " and " + kinds[len(kinds)-1] +
		", compiled into a graph that keeps every sink equal to what the sources say."
	return wrapText(intro, 100) + "\n\n" +
		"A PATH is a .hcl file or a directory of them; blocks of all files of a directory merge into one\n" +
		"configuration. Every block and attribute: `pipeline schema`, or docs/reference.md in the\n" +
		"source tree (README.md there is the guide)."
}

// wrapText breaks text into lines of at most width bytes at spaces.
func wrapText(text string, width int) string {
	var b strings.Builder
	line := 0
	for i, w := range strings.Fields(text) {
		switch {
		case i == 0:
		case line+1+len(w) > width:
			b.WriteByte('\n')
			line = 0
		default:
			b.WriteByte(' ')
			line++
		}
		b.WriteString(w)
		line += len(w)
	}
	return b.String()
}

// longFlags are accepted with a single dash too (`-json`, `-var x=1`, `-check`),
// as Terraform users write them.
var longFlags = []string{"json", "var", "check", "check-files", "diff", "write", "format", "listen", "allow-host", "log-format", "log-level", "markdown", "recursive", "mode", "namespace", "name", "image", "seccomp", "privileged", "queue-limit", "version", "against", "max-entries", "wait", "rate", "sample", "count", "interval", "run"}

func normalizeArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && len(a) > 2 {
			name, _, _ := strings.Cut(a[1:], "=")
			for _, f := range longFlags {
				if name == f {
					a = "-" + a
					break
				}
			}
		}
		out = append(out, a)
	}
	return out
}

// needPaths requires at least one PATH and, without one, says what to give.
func needPaths() cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return nil
		}
		return fmt.Errorf("%s needs a configuration: give one or more .hcl files or directories of them, "+
			"such as `pipeline %[1]s examples/flagship` (see `pipeline %[1]s --help`)", cmd.Name())
	}
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "pipeline %s\n", version)
			return nil
		},
	}
}
