package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/pipeline/pipeline/cmd/pipeline/inspect"
	"github.com/pipeline/pipeline/cmd/pipeline/planview"
	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/plan"
)

// fetchGraph asks a running `pipeline run` for its graph (GET /graph on
// its --listen address).
func fetchGraph(ctx context.Context, base string) (*planview.Reload, error) {
	u, err := inspect.AdminURL(base, "/graph", nil)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("--against: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("plan: read the running graph: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("plan: read the running graph: GET %s: %s: %s", u, resp.Status, strings.TrimSpace(string(b)))
	}
	var st graph.GraphState
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&st); err != nil {
		return nil, fmt.Errorf("plan: read the running graph: GET %s: %w", u, err)
	}
	return &planview.Reload{Against: base, Running: st}, nil
}

// keptEmitNothing drops what append-only sinks a reload keeps running
// would emit: only a new or rebuilt sink starts with an initial sync.
func keptEmitNothing(p *plan.PlanResult, rp *planview.Reload) {
	for i := range p.Sinks {
		s := &p.Sinks[i]
		if a, _ := rp.Diff.Action(s.Address); s.AppendOnly && a == graph.Kept {
			s.Changes = nil
		}
	}
}
