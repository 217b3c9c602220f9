package graph

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/node"
)

// Claimer is a node that writes exclusive resources.
type Claimer interface{ Claims() []node.Claim }

// checkClaims reports two nodes that claim one resource: two sinks on one
// pin or one log file flip it between their record sets forever.
func checkClaims(nodes []*Node) hcl.Diagnostics {
	var diags hcl.Diagnostics
	type owner struct {
		addr string
		rng  hcl.Range
	}
	first := map[string]owner{}
	for _, n := range nodes {
		c, ok := n.Impl().(Claimer)
		if !ok {
			continue
		}
		for _, cl := range c.Claims() {
			key := cl.What + "\x00" + cl.Name
			if o, dup := first[key]; dup {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Resource written by two nodes",
					Detail: fmt.Sprintf("%s also writes the %s %s (at %s). Two writers would undo each other's changes: give each node its own %s.",
						o.addr, cl.What, cl.Name, o.rng, cl.What),
					Subject: cl.Range.Ptr()})
				continue
			}
			first[key] = owner{n.Address, cl.Range}
		}
	}
	return diags
}
