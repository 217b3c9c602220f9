package graph

import (
	"slices"
	"sort"

	"github.com/pipeline/pipeline/engine/node"
)

// Action is what a reload does to one node.
type Action string

// The actions of a graph diff.
const (
	// Kept: the node's effective definition and its input are unchanged;
	// it keeps running with its state (no relist, same target).
	Kept Action = "kept"
	// Rebuilt: its definition or its input changed; a new instance
	// replaces the running one.
	Rebuilt Action = "rebuilt"
	// Added: only the new graph has it.
	Added Action = "added"
	// Removed: only the old graph has it.
	Removed Action = "removed"
)

// NodeDiff is the action for one address.
type NodeDiff struct {
	Address string    `json:"address"`
	Kind    node.Kind `json:"kind"`
	Action  Action    `json:"action"`
	// Changed names what differs for a rebuilt node, sorted: attribute
	// and nested block names of its body, and "type", "input" (its input
	// node or that node's definition), "projection" (what the graph reads
	// of a source's objects). Empty for other actions.
	Changed []string `json:"changed,omitempty"`
	// InPlace names the attributes of a kept node whose new values the
	// running node takes without a restart (on_remove), sorted.
	InPlace []string `json:"in_place,omitempty"`
}

// GraphDiff compares two compiled graphs node by node.
type GraphDiff struct {
	// Nodes holds every address of either graph, sorted by address.
	Nodes []NodeDiff
	// Relist holds the sources that would list their data afresh (added
	// or rebuilt), sorted; a kept source goes on from its current state.
	Relist []string
}

// Changed reports whether applying the diff changes anything, an
// attribute applied in place included.
func (d GraphDiff) Changed() bool {
	return slices.ContainsFunc(d.Nodes, func(n NodeDiff) bool { return n.Action != Kept || len(n.InPlace) > 0 })
}

// Count returns how many nodes get each action.
func (d GraphDiff) Count() map[Action]int {
	out := map[Action]int{}
	for _, n := range d.Nodes {
		out[n.Action]++
	}
	return out
}

// Action returns the action for addr, and false when neither graph has it.
func (d GraphDiff) Action(addr string) (Action, bool) {
	i := sort.Search(len(d.Nodes), func(i int) bool { return d.Nodes[i].Address >= addr })
	if i < len(d.Nodes) && d.Nodes[i].Address == addr {
		return d.Nodes[i].Action, true
	}
	return "", false
}

// DiffGraphs compares two graphs by their nodes' fingerprints (see
// Node.Fingerprint). Both must have compiled without errors; old may be
// nil (everything is added). A node whose input is rebuilt is rebuilt too,
// since its input's fingerprint is part of its own. DiffGraphs does no I/O.
func DiffGraphs(old, new *Graph) GraphDiff {
	if old == nil {
		old = &Graph{} // everything is added
	}
	if new == nil {
		new = &Graph{} // everything is removed
	}
	old.Fingerprints()
	new.Fingerprints()
	var d GraphDiff
	for _, n := range new.Nodes {
		nd := NodeDiff{Address: n.Address, Kind: n.Kind, Action: Added}
		if o := old.Node(n.Address); o != nil {
			nd.Action = Kept
			if o.Fingerprint != n.Fingerprint || n.Fingerprint == "" {
				nd.Action, nd.Changed = Rebuilt, changedParts(o, n)
			} else {
				nd.InPlace = inPlaceParts(o, n)
			}
		}
		if n.Kind == node.KindSource && nd.Action != Kept {
			d.Relist = append(d.Relist, n.Address)
		}
		d.Nodes = append(d.Nodes, nd)
	}
	for _, o := range old.Nodes {
		if new.Node(o.Address) == nil {
			d.Nodes = append(d.Nodes, NodeDiff{Address: o.Address, Kind: o.Kind, Action: Removed})
		}
	}
	sort.Slice(d.Nodes, func(i, j int) bool { return d.Nodes[i].Address < d.Nodes[j].Address })
	sort.Strings(d.Relist)
	return d
}

// changedParts lists the parts whose digests differ.
func changedParts(o, n *Node) []string {
	var out []string
	for k, v := range n.Parts {
		if o.Parts[k] != v {
			out = append(out, k)
		}
	}
	for k := range o.Parts {
		if _, ok := n.Parts[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// inPlaceParts lists the parts of a kept node whose digests differ: only
// attributes applied in place can (the others are in the fingerprint). A
// part the old node lacks (an instance of a version that did not record
// it) is not known to have changed.
func inPlaceParts(o, n *Node) []string {
	var out []string
	for k, v := range n.Parts {
		if ov, ok := o.Parts[k]; ok && ov != v {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
