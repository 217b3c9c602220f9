package main

import (
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline/pipeline/cmd/pipeline/configtest"
	"github.com/pipeline/pipeline/cmd/pipeline/lsp"
	"github.com/pipeline/pipeline/schema"
)

func newLSPCmd() *cobra.Command {
	var debounce time.Duration
	cmd := &cobra.Command{
		Use:   "lsp [--debounce DURATION]",
		Short: "Serve the Language Server Protocol on stdin/stdout, for editors",
		Long: "Runs a language server for pipeline configurations: diagnostics as you type (validate's, for the " +
			"whole directory of the file, unsaved buffers included), completion, hover, go to definition, find " +
			"references, document symbols and formatting (fmt's). Editors start it themselves: see docs/editors.md.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			opts := lspOptions(debounce)
			opts.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			return lsp.Serve(ctx, stdio{cmd.InOrStdin(), cmd.OutOrStdout()}, opts)
		},
	}
	cmd.Flags().DurationVar(&debounce, "debounce", 150*time.Millisecond, "wait this long after the last keystroke before checking")
	return cmd
}

// lspParseBytes bounds the source of the files whose parses the server
// keeps between checks (schema.Parses): a directory's files are parsed
// again only when they change.
const lspParseBytes = 8 << 20

// lspOptions builds the server from what validate and fmt use.
func lspOptions(debounce time.Duration) lsp.Options {
	reg := registry()
	parses := schema.NewParses(lspParseBytes)
	return lsp.Options{
		Registry: reg,
		Check: func(path string, overlay map[string][]byte) lsp.Checked {
			l := loadWith([]string{path}, schema.Options{Overlay: overlay, Parses: parses}, reg)
			c := lsp.Checked{Files: l.files, Diags: l.diags}
			if l.graph != nil {
				c.Nodes = map[string]any{}
				for _, n := range l.graph.Nodes {
					if impl := n.Impl(); impl != nil {
						c.Nodes[n.Address] = impl
					}
				}
			}
			return c
		},
		TestFile:  configtest.FileBlock,
		CheckTest: configtest.Check,
		Format:    format,
		Debounce:  debounce,
	}
}

// stdio is the server's stream: the client writes to stdin and reads stdout.
type stdio struct {
	io.Reader
	io.Writer
}

// Close ends the stream; the process exits right after.
func (stdio) Close() error { return nil }
