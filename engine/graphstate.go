package engine

import (
	"maps"
	"sort"

	"github.com/pipeline/pipeline/engine/node"
)

// GraphState is what a running instance shows of its graph for a plan of a
// reload against it (`plan --against`): every node's fingerprint and the
// digests of its parts, and how many records each node outputs. It holds
// digests and counts only, never a value, so it can be served read-only on
// the admin endpoint.
type GraphState struct {
	Nodes []NodeState `json:"nodes"`
	// FingerprintKeyFile is where the instance keeps the key of the
	// sensitive parts of its fingerprints, readable only by its user
	// (empty: nowhere). A plan on the same machine as that user reads it
	// to compare the nodes that hold a secret.
	FingerprintKeyFile string `json:"fingerprint_key_file,omitempty"`
}

// NodeState is one node of a GraphState.
type NodeState struct {
	Address     string            `json:"address"`
	Kind        node.Kind         `json:"kind"`
	Type        string            `json:"type"`
	Fingerprint string            `json:"fingerprint"`
	Parts       map[string]string `json:"parts"`
	// Records is the size of the node's output (sources and transforms).
	Records int `json:"records"`
	// Synced reports the output synced (sources, transforms) or the
	// target written after the input synced (sinks).
	Synced bool `json:"synced"`
	// Pending are the deletions a transform holds back (grace_period).
	Pending []node.PendingDeletion `json:"pending,omitempty"`
}

// GraphState returns the running graph's state. A reload swaps the graph
// and adds to its maps under r.mu: take what is needed under the lock, and
// ask the collections and nodes without it.
func (r *Runtime) GraphState() GraphState {
	var out GraphState
	r.mu.RLock()
	nodes, outs, sinks := r.g.Nodes, maps.Clone(r.outs), maps.Clone(r.sinks)
	r.mu.RUnlock()
	for _, n := range nodes {
		ns := n.state()
		if c := outs[n]; c != nil {
			ns.Records, ns.Synced = c.len(), c.isSynced()
		} else if s := sinks[n]; s != nil {
			ns.Synced = s.Started()
		}
		if p, ok := n.Impl().(node.PendingLister); ok {
			ns.Pending = p.Pending()
		}
		out.Nodes = append(out.Nodes, ns)
	}
	sort.Slice(out.Nodes, func(i, j int) bool { return out.Nodes[i].Address < out.Nodes[j].Address })
	return out
}

// State returns what a running instance of g would show of its graph
// before it ran: its fingerprints, no records. Tests compare plans of a
// reload with it without starting anything.
func (g *Graph) State() GraphState {
	g.fingerprints()
	var out GraphState
	for _, n := range g.Nodes {
		out.Nodes = append(out.Nodes, n.state())
	}
	sort.Slice(out.Nodes, func(i, j int) bool { return out.Nodes[i].Address < out.Nodes[j].Address })
	return out
}

func (n *Node) state() NodeState {
	return NodeState{Address: n.Address, Kind: n.Kind, Type: n.Type, Fingerprint: n.Fingerprint, Parts: n.parts}
}

// Graph rebuilds the nodes of a GraphState (address, kind, type and
// fingerprints, nothing runnable), so DiffGraphs compares a running graph
// with a new one. A node's input is not known: what the input changes is
// already in its fingerprint.
func (s GraphState) Graph() *Graph {
	g := &Graph{byAddr: map[string]*Node{}}
	for _, ns := range s.Nodes {
		n := &Node{Address: ns.Address, Kind: ns.Kind, Type: ns.Type, Fingerprint: ns.Fingerprint, parts: ns.Parts}
		g.Nodes = append(g.Nodes, n)
		g.byAddr[n.Address] = n
	}
	return g
}
