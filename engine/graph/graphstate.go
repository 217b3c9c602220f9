package graph

import (
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

// State returns what a running instance of g would show of its graph
// before it ran: its fingerprints, no records. Tests compare plans of a
// reload with it without starting anything.
func (g *Graph) State() GraphState {
	g.Fingerprints()
	var out GraphState
	for _, n := range g.Nodes {
		out.Nodes = append(out.Nodes, n.State())
	}
	sort.Slice(out.Nodes, func(i, j int) bool { return out.Nodes[i].Address < out.Nodes[j].Address })
	return out
}

// State is what a GraphState shows of n before it ran.
func (n *Node) State() NodeState {
	return NodeState{Address: n.Address, Kind: n.Kind, Type: n.Type, Fingerprint: n.Fingerprint, Parts: n.Parts}
}

// Graph rebuilds the nodes of a GraphState (address, kind, type and
// fingerprints, nothing runnable), so DiffGraphs compares a running graph
// with a new one. A node's input is not known: what the input changes is
// already in its fingerprint.
func (s GraphState) Graph() *Graph {
	g := New(nil)
	for _, ns := range s.Nodes {
		n := &Node{Address: ns.Address, Kind: ns.Kind, Type: ns.Type, Fingerprint: ns.Fingerprint, Parts: ns.Parts}
		g.Add(n)
	}
	return g
}
