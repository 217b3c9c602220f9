package graph

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/node"
)

// project tells every source that can decode selectively (node.Projector)
// which object paths the graph reads from it, so that it decodes only
// those. A consumer that reads objects through expressions
// (node.ReadsObjects) adds what its expressions read; a transform that
// passes objects on (filter, debounce, grace_period) adds what its own
// consumers read; any other consumer of objects (a sink, a transform that
// does not say what it reads) makes the source keep whole objects.
func (g *Graph) project() hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, n := range g.Nodes {
		pr, ok := n.Source.(node.Projector)
		if !ok || n.Emits != node.Objects {
			continue
		}
		p := &node.Paths{}
		diags = append(diags, reads(n, p)...)
		if p.Whole() {
			p = nil
		}
		diags = append(diags, pr.Project(p)...)
		n.Projection = p
	}
	return diags
}

// reads adds to p what n's consumers read of its objects.
func reads(n *Node, p *node.Paths) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, c := range n.Consumers {
		if p.Whole() {
			return diags
		}
		if c.Impl() == nil { // did not build: its errors are reported
			continue
		}
		r, ok := c.Impl().(node.ObjectReader)
		if !ok {
			p.Merge(node.WholeObject())
			continue
		}
		q, d := r.ObjectPaths()
		diags = append(diags, wholeReadDetail(d, n.Address)...)
		p.Merge(q)
		if c.Emits == node.Objects { // passes objects on: its consumers read them too
			diags = append(diags, reads(c, p)...)
		}
	}
	return diags
}

// wholeReadDetail completes the warnings of a reader with the source whose
// objects are kept whole.
func wholeReadDetail(diags hcl.Diagnostics, source string) hcl.Diagnostics {
	for _, d := range diags {
		if d.Summary == node.WholeObjectSummary {
			d.Detail = fmt.Sprintf("%s Because of it, %s decodes and keeps whole objects.", d.Detail, source)
		}
	}
	return diags
}
