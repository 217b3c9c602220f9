package inspect

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/pipeline/pipeline/cmd/pipeline/view"
	"github.com/pipeline/pipeline/engine"
)

// TopOptions say what Top reads and how often.
type TopOptions struct {
	Against  string // the instance's admin address, or a URL
	Interval time.Duration
	Count    int // stop after this many refreshes; 0 runs until ctx ends
}

// Top shows the nodes of the instance at f.Against on w every f.Interval.
func Top(ctx context.Context, w io.Writer, f TopOptions) error {
	if f.Interval < 100*time.Millisecond {
		return fmt.Errorf("--interval %s: give at least 100ms", f.Interval)
	}
	metricsURL, err := AdminURL(f.Against, "/metrics", url.Values{})
	if err != nil {
		return err
	}
	readyURL, _ := AdminURL(f.Against, "/readyz", url.Values{})
	pv := topView{w: w, colour: view.Colourful(w), against: f.Against}
	var prev *topSample
	tick := time.NewTicker(f.Interval)
	defer tick.Stop()
	for frame := 1; ; frame++ {
		s, err := takeSample(ctx, metricsURL, readyURL)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("top: %w (is `pipeline run` serving on %s?)", err, f.Against)
		}
		if err := pv.render(topRows(prev, s), s); err != nil {
			return err
		}
		prev = s
		if f.Count > 0 && frame >= f.Count {
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
	body, err := get(ctx, metricsURL)
	if err != nil {
		return nil, err
	}
	s.metrics, err = parseNodeMetrics(body)
	if err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	body, err = get(ctx, readyURL)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(body, &s.ready); err != nil {
		return nil, fmt.Errorf("read /readyz: %w", err)
	}
	return s, nil
}
