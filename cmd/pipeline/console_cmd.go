package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline/pipeline/cmd/pipeline/inspect"
)

type consoleFlags struct {
	against string
	open    bool
}

func newConsoleCmd() *cobra.Command {
	var f consoleFlags
	cmd := &cobra.Command{
		Use:   "console [--against ADDR] [--open]",
		Short: "Print (or open) the URL of a running pipeline's web console",
		Long: "Every `pipeline run` serves a live web console at GET / of its --listen address: the graph left to\n" +
			"right with each node's health, records, rates and queue depth, updated every second; a node's\n" +
			"block, fields, recent deltas and metrics; explain for a key along the graph; and the reloads.\n" +
			"The console is read-only and needs no network beyond the instance. This command checks that the\n" +
			"console answers at --against and prints its URL; --open also opens it in the desktop's browser.\n" +
			"For a DaemonSet: kubectl -n NAMESPACE port-forward pod/POD 9464, then open http://127.0.0.1:9464/.",
		Example: "  pipeline console\n  pipeline console --against 127.0.0.1:19464 --open",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runConsole(cmd.Context(), cmd.OutOrStdout(), f)
		},
	}
	cmd.Flags().StringVar(&f.against, "against", "127.0.0.1:9464", "admin address of the running pipeline (its --listen)")
	cmd.Flags().BoolVar(&f.open, "open", false, "open the console in the desktop's browser (xdg-open, open)")
	return cmd
}

func runConsole(ctx context.Context, w io.Writer, f consoleFlags) error {
	u, err := inspect.AdminURL(f.against, "/", url.Values{})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("console: %w (is `pipeline run` serving on %s?)", err, f.against)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("console: GET %s: %s (is %s the --listen address of `pipeline run`?)", u, resp.Status, f.against)
	}
	fmt.Fprintln(w, u)
	if !f.open {
		return nil
	}
	opener := "xdg-open"
	if runtime.GOOS == "darwin" {
		opener = "open"
	}
	if err := exec.CommandContext(context.WithoutCancel(ctx), opener, u).Start(); err != nil {
		return fmt.Errorf("console: open the URL above yourself: %w", err)
	}
	return nil
}

// consoleURL is the console's URL on the admin address addr; an address
// that listens on every interface is shown as the loopback one.
func consoleURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr + "/"
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}
