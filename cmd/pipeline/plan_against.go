package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/pipeline/pipeline/cmd/pipeline/view"
	"github.com/pipeline/pipeline/engine"
)

// reloadPlan is what a reload of a running instance to the planned
// configuration would do to its nodes.
type reloadPlan struct {
	against string
	diff    engine.GraphDiff
	running engine.GraphState
	// keyErr says why the plan could not use the instance's fingerprint
	// key: nodes holding a secret then show as rebuilt.
	keyErr error
}

// fetchGraph asks a running `pipeline run` for its graph (GET /graph on
// its --listen address).
func fetchGraph(ctx context.Context, base string) (*reloadPlan, error) {
	u, err := adminURL(base, "/graph", nil)
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
	var st engine.GraphState
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&st); err != nil {
		return nil, fmt.Errorf("plan: read the running graph: GET %s: %w", u, err)
	}
	return &reloadPlan{against: base, running: st}, nil
}

// compare sets the node diff of a reload of the instance to g.
func (rp *reloadPlan) compare(g *engine.Graph) { rp.diff = engine.DiffGraphs(rp.running.Graph(), g) }

var reloadMarks = map[engine.Action]string{engine.Added: "+", engine.Rebuilt: "~", engine.Removed: "-", engine.Kept: "="}

// writeReloadText prints the node diff of a reload: every node that would
// change, the count of those kept, and the sources that would relist.
func (v textPlan) writeReload(b *view.TermText, rp *reloadPlan) {
	b.Paint("\x1b[1m", "Reload of the instance at "+rp.against+":")
	fmt.Fprintln(b)
	kept := 0
	for _, n := range rp.diff.Nodes {
		switch {
		case n.Action == engine.Kept && len(n.InPlace) == 0:
			kept++
		case n.Action == engine.Kept:
			fmt.Fprintf(b, "  = %s  kept, applied in place (%s)\n", n.Address, strings.Join(n.InPlace, ", "))
		case len(n.Changed) > 0:
			fmt.Fprintf(b, "  %s %s  %s (%s)\n", reloadMarks[n.Action], n.Address, n.Action, strings.Join(n.Changed, ", "))
		default:
			fmt.Fprintf(b, "  %s %s  %s\n", reloadMarks[n.Action], n.Address, n.Action)
		}
	}
	fmt.Fprintf(b, "  = %d nodes unchanged, kept running with their state\n", kept)
	if rp.keyErr != nil {
		fmt.Fprintf(b, "  note: nodes holding a secret show as rebuilt: the instance's fingerprint key could not be read (%v); run plan on its machine as its user\n", rp.keyErr)
	}
	if len(rp.diff.Relist) > 0 {
		fmt.Fprintf(b, "  sources that would list afresh: %s\n", strings.Join(rp.diff.Relist, ", "))
	}
	for _, n := range rp.running.Nodes {
		for _, p := range n.Pending {
			fmt.Fprintf(b, "  %s holds back the deletion of %s until %s\n", n.Address, p.Key, p.Due.UTC().Format(time.RFC3339))
		}
	}
}

type reloadDoc struct {
	Against string `json:"against"`
	// SecretsCompared is false when the instance's fingerprint key could
	// not be read: nodes holding a secret then show as rebuilt.
	SecretsCompared bool          `json:"secrets_compared"`
	Nodes           []nodeDiffDoc `json:"nodes"`
	Relist          []string      `json:"relist"`
	// Pending are the deletions the running instance's grace periods hold.
	Pending []pendingDoc `json:"pending_deletions"`
}

type pendingDoc struct {
	Node string    `json:"node,omitempty"`
	Key  string    `json:"key"`
	Due  time.Time `json:"due"`
}

type nodeDiffDoc struct {
	Address string   `json:"address"`
	Kind    string   `json:"kind"`
	Action  string   `json:"action"`
	Changed []string `json:"changed"`
	// InPlace names the attributes of a kept node applied to it without
	// a restart.
	InPlace []string `json:"in_place"`
}

func reloadJSON(rp *reloadPlan) *reloadDoc {
	if rp == nil {
		return nil
	}
	d := &reloadDoc{Against: rp.against, Nodes: []nodeDiffDoc{}, Relist: rp.diff.Relist, SecretsCompared: rp.keyErr == nil}
	for _, n := range rp.diff.Nodes {
		nd := nodeDiffDoc{Address: n.Address, Kind: string(n.Kind), Action: string(n.Action), Changed: n.Changed, InPlace: n.InPlace}
		if nd.Changed == nil {
			nd.Changed = []string{}
		}
		if nd.InPlace == nil {
			nd.InPlace = []string{}
		}
		d.Nodes = append(d.Nodes, nd)
	}
	if d.Relist == nil {
		d.Relist = []string{}
	}
	d.Pending = []pendingDoc{}
	for _, n := range rp.running.Nodes {
		for _, p := range n.Pending {
			d.Pending = append(d.Pending, pendingDoc{Node: n.Address, Key: p.Key, Due: p.Due.UTC()})
		}
	}
	return d
}

// keptEmitNothing drops what append-only sinks a reload keeps running
// would emit: only a new or rebuilt sink starts with an initial sync.
func keptEmitNothing(p *engine.PlanResult, rp *reloadPlan) {
	for i := range p.Sinks {
		s := &p.Sinks[i]
		if a, _ := rp.diff.Action(s.Address); s.AppendOnly && a == engine.Kept {
			s.Changes = nil
		}
	}
}
