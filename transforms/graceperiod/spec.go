package graceperiod

import (
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

var delayAttr = schema.Duration("delay").Default(30*time.Second, `"30s"`).
	Doc("How long a deletion waits before it passes. An upsert of the key meanwhile cancels it; another deletion restarts the wait.")

// Spec declares transform "grace_period".
func Spec() node.Spec {
	return node.Spec{
		Kind:    node.KindTransform,
		Type:    "grace_period",
		Summary: "Holds deletions for a delay; a re-add during the wait cancels them.",
		Doc: "Drains removals gently: a pod IP stays allowed while its pod restarts or moves. " +
			"Pending deletions are exported as pipeline_grace_pending_deletions and listed, with their due " +
			"times, by the transform's Pending method (for plan and explain). A reset of the input turns every " +
			"key missing from the new state into a pending deletion, never an immediate one.",
		Body:   schema.Block{Attrs: []schema.Attribute{delayAttr}},
		Output: node.SameAsInput,
		New: func(b node.Build) (any, hcl.Diagnostics) {
			d, _, diags := delayAttr.Get(b.Content)
			return &Transform{address: b.Address, delay: d, pending: newQueue()}, diags
		},
	}
}
