package debounce

import (
	"fmt"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

var (
	intervalAttr = schema.Duration("interval").Default(100*time.Millisecond, `"100ms"`).
			Doc("Quiet time after the last change before pending changes are flushed.")
	maxWaitAttr = schema.Duration("max_wait").
			Doc("Longest time a change may wait, however busy the input. Default: 10 x interval.").Example(`"1s"`)
)

// Spec declares transform "debounce".
func Spec() node.Spec {
	return node.Spec{
		Kind:    node.KindTransform,
		Type:    "debounce",
		Summary: "Coalesces bursts of changes per key and flushes them in batches.",
		Doc: "Batch statistics are exported as pipeline_debounce_flushes_total and " +
			"pipeline_debounce_deltas_total{op=created|modified|deleted}.",
		Body:   schema.Block{Attrs: []schema.Attribute{intervalAttr, maxWaitAttr}},
		Output: node.SameAsInput,
		New:    newTransform,
	}
}

func newTransform(b node.Build) (any, hcl.Diagnostics) {
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
