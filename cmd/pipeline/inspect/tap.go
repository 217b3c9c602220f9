package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/pipeline/pipeline/cmd/pipeline/admin"
	"github.com/pipeline/pipeline/cmd/pipeline/view"
)

type tapFlags struct {
	against      string
	json         bool
	rate, sample int
	count        int
}

func newTapCmd() *cobra.Command {
	var f tapFlags
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
			return runTap(ctx, cmd.OutOrStdout(), args, f)
		},
	}
	cmd.Flags().StringVar(&f.against, "against", "127.0.0.1:9464", "admin address of the running pipeline (its --listen)")
	cmd.Flags().BoolVar(&f.json, "json", false, "print JSON lines instead of the readable form")
	cmd.Flags().IntVar(&f.rate, "rate", 100, "lines per second at most; 0 for no cap")
	cmd.Flags().IntVar(&f.sample, "sample", 1, "keep every Nth delta")
	cmd.Flags().IntVar(&f.count, "count", 0, "stop after this many deltas; 0 runs until interrupted")
	return cmd
}

// adminURL turns --against (host:port or a URL) into the URL of path.
func adminURL(against, path string, q url.Values) (string, error) {
	base := against
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("--against %q: give the address `pipeline run --listen` serves, such as 127.0.0.1:9464", against)
	}
	u.Path, u.RawQuery = strings.TrimSuffix(u.Path, "/")+path, q.Encode()
	return u.String(), nil
}

func runTap(ctx context.Context, w io.Writer, nodes []string, f tapFlags) error {
	q := url.Values{"node": nodes, "rate": {strconv.Itoa(f.rate)}, "sample": {strconv.Itoa(f.sample)}}
	u, err := adminURL(f.against, "/tap", q)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("tap: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("tap: %w (is `pipeline run` serving on %s?)", err, f.against)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("tap: %s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	return printTap(ctx, w, resp.Body, f)
}

// printTap copies the stream to w until it ends, ctx ends or f.count
// deltas were printed.
func printTap(ctx context.Context, w io.Writer, r io.Reader, f tapFlags) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	printed := 0
	for sc.Scan() {
		var l admin.TapLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return fmt.Errorf("tap: unreadable line from the server: %w", err)
		}
		if f.json {
			fmt.Fprintf(w, "%s\n", sc.Bytes())
		} else {
			fmt.Fprintln(w, view.Printable(readableTap(l)))
		}
		if l.Op != "skipped" {
			printed++
		}
		if f.count > 0 && printed >= f.count {
			return nil
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("tap: %w", err)
	}
	return nil
}

// readableTap is one line of the readable form:
// "15:04:05.000 sink.ebpf_map.allowed + 10.0.0.7/32 \"0100\"". A
// transform's upsert names the source the record came from, which for a
// fan-in says which input's data it is.
func readableTap(l admin.TapLine) string {
	ts := l.Time.Local().Format("15:04:05.000")
	switch l.Op {
	case "upsert":
		if o := l.Origin; o != nil && o.Source != "" && o.Source != l.Node {
			return fmt.Sprintf("%s %s + %s %s  (from %s)", ts, l.Node, l.Key, l.Value, o.Source)
		}
		return fmt.Sprintf("%s %s + %s %s", ts, l.Node, l.Key, l.Value)
	case "delete":
		return fmt.Sprintf("%s %s - %s", ts, l.Node, l.Key)
	}
	var parts []string
	if l.Dropped > 0 {
		parts = append(parts, fmt.Sprintf("%d dropped (this client fell behind)", l.Dropped))
	}
	if l.Limited > 0 {
		parts = append(parts, fmt.Sprintf("%d over --rate", l.Limited))
	}
	return fmt.Sprintf("%s skipped: %s", ts, strings.Join(parts, ", "))
}
