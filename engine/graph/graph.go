package graph

import (
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// Graph is a compiled configuration: typed nodes in topological order
// (every node after its input).
type Graph struct {
	Config *schema.Config
	Nodes  []*Node
	byAddr map[string]*Node
	// contents are the built nodes' decoded bodies until their
	// fingerprints are computed (fingerprints): validate never needs them.
	contents map[*Node]*schema.Content
	fpOnce   sync.Once
}

// Node is one compiled source, transform or sink.
type Node struct {
	Address string
	Kind    node.Kind
	Type    string
	Name    string
	Spec    node.Spec
	Block   *schema.NodeBlock
	// Built holds the node.Source, node.Transform or node.Sink the spec
	// built, in the field of Kind; all are nil when the node did not build.
	node.Built
	// Inputs are every upstream node, in the order of `inputs` (one
	// element for `input`). More than one makes a fan-in: the engine
	// consumes their union (engine/fanin.go).
	Inputs []*Node
	// InputRange is the range of the input or inputs attribute.
	InputRange hcl.Range
	// OnConflict and Merge say how a fan-in resolves a key two inputs hold
	// with different values; Merge is nil unless set.
	OnConflict string
	Merge      hcl.Expression
	// inputRanges holds the range of each element of Inputs; elemRanges
	// the range of each element of the attribute as written.
	inputRanges, elemRanges []hcl.Range
	// Emits is what the node outputs (SameAsInput resolved); empty for sinks.
	Emits node.DataType
	// Consumers are the nodes whose input is this node.
	Consumers []*Node
	// Projection is what the graph reads of a source's objects, for a
	// source that decodes selectively; nil: whole objects.
	Projection *node.Paths
	// Prune and Resync are the common sink attributes.
	Prune  bool
	Resync time.Duration
	// MaxDeletes is the sink's deletion brake (max_deletes).
	MaxDeletes node.MaxDeletes
	// OnRemove is what a reload that removes the sink does to its target:
	// node.OnRemoveKeep or node.OnRemoveClean.
	OnRemove string
	// Fingerprint digests the node's effective definition and its input's
	// fingerprint (see fingerprint.go); DiffGraphs compares it. Empty when
	// the node did not build, and until DiffGraphs or engine.NewRuntime computed it.
	Fingerprint string
	// Parts digests each part of the definition (fingerprint.go).
	Parts map[string]string
}

// Input is the upstream node of a transform or sink: its only input, or
// the first of Inputs; nil when it has none.
func (n *Node) Input() *Node {
	if len(n.Inputs) == 0 {
		return nil
	}
	return n.Inputs[0]
}

// Node returns the node with the given address, or nil.
func (g *Graph) Node(addr string) *Node { return g.byAddr[addr] }

// New returns an empty graph of cfg, for Add.
func New(cfg *schema.Config) *Graph { return &Graph{Config: cfg, byAddr: map[string]*Node{}} }

// Add appends n, whose inputs are already in g.
func (g *Graph) Add(n *Node) {
	g.Nodes = append(g.Nodes, n)
	g.byAddr[n.Address] = n
}
