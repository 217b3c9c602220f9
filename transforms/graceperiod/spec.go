package graceperiod

import (
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// delayAttr is the grace period's only attribute.
var delayAttr = schema.Duration("delay").Default(30*time.Second, `"30s"`).
	Doc("How long a deletion waits before it passes downstream. An upsert of the key during the wait cancels the deletion; another deletion of the key restarts the wait. \"0s\" passes deletions at once.").
	Example(`"2m"`)

// Spec declares transform "grace_period".
func Spec() node.Spec {
	return node.Spec{
		Kind:    node.KindTransform,
		Type:    "grace_period",
		Summary: "Holds deletions for a delay; a re-add during the wait cancels them.",
		Doc: "Drains removals gently: a pod's IP stays allowed while the pod restarts or is replaced, and connections " +
			"to a pod that goes away get time to finish. Upserts pass at once (a re-add that changes nothing is not " +
			"repeated); deletions that end their wait at the same moment pass as one batch.\n\n" +
			"A resynchronisation of the input turns every key missing from the new state into a pending deletion, " +
			"never an immediate one. Deletions wait the same way before the input's initial sync as after it.\n\n" +
			"Waiting deletions are counted by the pipeline_grace_pending_deletions gauge. Any number of them costs " +
			"memory only (one timer serves them all), about 100 bytes each beyond the record itself.",
		Body:   schema.Block{Attrs: []schema.Attribute{delayAttr}},
		Output: node.SameAsInput,
		NewTransform: func(b node.Build) (node.Transform, hcl.Diagnostics) {
			d, _, diags := delayAttr.Get(b.Content)
			return &Transform{address: b.Address, delay: d, pending: newQueue()}, diags
		},
	}
}
