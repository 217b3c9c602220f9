package debounce

import (
	"fmt"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// Attributes of transform "debounce".
var (
	intervalAttr = schema.Duration("interval").Default(100*time.Millisecond, `"100ms"`).
			Doc("Quiet time: pending changes are flushed once this long has passed without a new change. Must be greater than zero.").
			Example(`"250ms"`)
	maxWaitAttr = schema.Duration("max_wait").
			Doc("Longest time a change may be held, however busy the input: pending changes are flushed at the latest this long after the first of them arrived, so constant churn cannot starve downstream. Default: 10 × interval (1s with the default interval). Must not be shorter than interval.").
			Example(`"1s"`)
)

// Spec declares transform "debounce".
func Spec() node.Spec {
	return node.Spec{
		Kind:    node.KindTransform,
		Type:    "debounce",
		Summary: "Coalesces bursts of changes per key and flushes them in batches.",
		Doc: "Changes are held per key and the last one wins: a key updated ten times within the window is written " +
			"once, and a key created and deleted within the window is never written. The batch is flushed when " +
			"interval has passed since the last change (trailing edge), or max_wait after the first pending change, " +
			"whichever comes first.\n\n" +
			"The initial state is not held back: the first state of the input and every resynchronisation " +
			"pass at once, and the output is marked synced right after the flush that follows the input's initial sync. " +
			"A resynchronisation replaces pending changes, which it already contains.\n\n" +
			"Metrics: pipeline_debounce_flushes_total counts batches, and pipeline_debounce_deltas_total{op} counts their " +
			"deltas by what they do downstream: created (a new key), modified (a key already written) or deleted.",
		Body:         schema.Block{Attrs: []schema.Attribute{intervalAttr, maxWaitAttr}},
		Output:       node.SameAsInput,
		NewTransform: newTransform,
	}
}

// newTransform reads interval and max_wait and checks that they make sense
// together.
func newTransform(b node.Build) (node.Transform, hcl.Diagnostics) {
	interval, irng, diags := intervalAttr.Get(b.Content)
	maxWait, mrng, d := maxWaitAttr.Get(b.Content)
	diags = append(diags, d...)
	if diags.HasErrors() {
		return nil, diags
	}
	if interval <= 0 {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid interval",
			Detail: "interval must be greater than zero.", Subject: irng.Ptr()}}
	}
	if !maxWaitAttr.Has(b.Content) {
		maxWait = 10 * interval
	} else if maxWait < interval {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid max_wait",
			Detail:  fmt.Sprintf("max_wait (%s) must not be shorter than interval (%s).", maxWait, interval),
			Subject: mrng.Ptr()}}
	}
	return &Transform{address: b.Address, interval: interval, maxWait: maxWait}, nil
}
