package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline/pipeline/engine"
)

type topFlags struct {
	against  string
	interval time.Duration
	count    int
}

func newTopCmd() *cobra.Command {
	var f topFlags
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
			return runTop(ctx, cmd.OutOrStdout(), f)
		},
	}
	cmd.Flags().StringVar(&f.against, "against", "127.0.0.1:9464", "admin address of the running pipeline (its --listen)")
	cmd.Flags().DurationVar(&f.interval, "interval", time.Second, "time between refreshes")
	cmd.Flags().IntVar(&f.count, "count", 0, "stop after this many refreshes; 0 runs until interrupted")
	return cmd
}

func runTop(ctx context.Context, w io.Writer, f topFlags) error {
	if f.interval < 100*time.Millisecond {
		return fmt.Errorf("--interval %s: give at least 100ms", f.interval)
	}
	metricsURL, err := adminURL(f.against, "/metrics", url.Values{})
	if err != nil {
		return err
	}
	readyURL, _ := adminURL(f.against, "/readyz", url.Values{})
	pv := topView{w: w, colour: colourful(w), against: f.against}
	var prev *topSample
	tick := time.NewTicker(f.interval)
	defer tick.Stop()
	for frame := 1; ; frame++ {
		s, err := takeSample(ctx, metricsURL, readyURL)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("top: %w (is `pipeline run` serving on %s?)", err, f.against)
		}
		if err := pv.render(topRows(prev, s), s); err != nil {
			return err
		}
		prev = s
		if f.count > 0 && frame >= f.count {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// topSample is one read of the admin endpoint.
type topSample struct {
	at      time.Time
	ready   engine.Readiness
	metrics map[string]map[string]float64 // metric (with direction/op/result) -> node -> value
}

func takeSample(ctx context.Context, metricsURL, readyURL string) (*topSample, error) {
	s := &topSample{at: time.Now()}
	body, err := adminGet(ctx, metricsURL)
	if err != nil {
		return nil, err
	}
	s.metrics, err = parseNodeMetrics(body)
	if err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	body, err = adminGet(ctx, readyURL)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(body, &s.ready); err != nil {
		return nil, fmt.Errorf("read /readyz: %w", err)
	}
	return s, nil
}

// adminGet reads a whole admin response; /readyz answers 503 with a body.
func adminGet(ctx context.Context, u string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusServiceUnavailable {
		return nil, fmt.Errorf("%s: %s", u, resp.Status)
	}
	return body, nil
}
