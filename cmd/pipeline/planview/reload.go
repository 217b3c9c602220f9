package planview

import (
	"fmt"
	"strings"
	"time"

	"github.com/pipeline/pipeline/cmd/pipeline/view"
	"github.com/pipeline/pipeline/engine/graph"
)

// Reload is what a reload of a running instance to the planned
// configuration would do to its nodes.
type Reload struct {
	Against string // the instance's admin address
	Diff    graph.GraphDiff
	Running graph.GraphState
	// KeyErr says why the plan could not use the instance's fingerprint
	// key: nodes holding a secret then show as rebuilt.
	KeyErr error
}

var reloadMarks = map[graph.Action]string{graph.Added: "+", graph.Rebuilt: "~", graph.Removed: "-", graph.Kept: "="}

// WriteReload prints the node diff of a reload: every node that would
// change, the count of those kept, and the sources that would relist.
func (v Text) WriteReload(b *view.TermText, rp *Reload) {
	b.Paint("\x1b[1m", "Reload of the instance at "+rp.Against+":")
	fmt.Fprintln(b)
	kept := 0
	for _, n := range rp.Diff.Nodes {
		switch {
		case n.Action == graph.Kept && len(n.InPlace) == 0:
			kept++
		case n.Action == graph.Kept:
			fmt.Fprintf(b, "  = %s  kept, applied in place (%s)\n", n.Address, strings.Join(n.InPlace, ", "))
		case len(n.Changed) > 0:
			fmt.Fprintf(b, "  %s %s  %s (%s)\n", reloadMarks[n.Action], n.Address, n.Action, strings.Join(n.Changed, ", "))
		default:
			fmt.Fprintf(b, "  %s %s  %s\n", reloadMarks[n.Action], n.Address, n.Action)
		}
	}
	fmt.Fprintf(b, "  = %d nodes unchanged, kept running with their state\n", kept)
	if rp.KeyErr != nil {
		fmt.Fprintf(b, "  note: nodes holding a secret show as rebuilt: the instance's fingerprint key could not be read (%v); run plan on its machine as its user\n", rp.KeyErr)
	}
	if len(rp.Diff.Relist) > 0 {
		fmt.Fprintf(b, "  sources that would list afresh: %s\n", strings.Join(rp.Diff.Relist, ", "))
	}
	for _, n := range rp.Running.Nodes {
		for _, p := range n.Pending {
			fmt.Fprintf(b, "  %s holds back the deletion of %s until %s\n", n.Address, p.Key, p.Due.UTC().Format(time.RFC3339))
		}
	}
}

// ReloadDoc is what a reload would do to the running instance's nodes.
type ReloadDoc struct {
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

// ReloadJSON is the reload part of the --json document; nil without --against.
func ReloadJSON(rp *Reload) *ReloadDoc {
	if rp == nil {
		return nil
	}
	d := &ReloadDoc{Against: rp.Against, Nodes: []nodeDiffDoc{}, Relist: rp.Diff.Relist, SecretsCompared: rp.KeyErr == nil}
	for _, n := range rp.Diff.Nodes {
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
	for _, n := range rp.Running.Nodes {
		for _, p := range n.Pending {
			d.Pending = append(d.Pending, pendingDoc{Node: n.Address, Key: p.Key, Due: p.Due.UTC()})
		}
	}
	return d
}
