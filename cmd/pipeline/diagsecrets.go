package main

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/internal/redact"
	"github.com/pipeline/pipeline/schema"
)

// maskDiagnostics is the second net of diagnostics: a node's diagnostic
// may name a value it read raw (two sinks claiming one path computed from
// a secret). Values themselves never reach a diagnostic marked; the text
// of every sensitive value, and of every attribute computed from one, is
// masked here in the summary and the detail.
//
// A diagnostic HCL built while evaluating an expression that reads a
// sensitive value may quote a value derived from it ("Duplicate object
// key" names the key upper(var.token) produced), whose text no list of
// secrets holds: its detail is replaced.
func maskDiagnostics(diags hcl.Diagnostics, cfg *schema.Config) {
	for _, d := range diags {
		if schema.DiagShowsSensitive(d) {
			d.Detail = "The detail is not shown: the expression uses a sensitive value, which it may quote. " +
				"Check the expression and the values of the sensitive variables it uses."
		}
	}
	if cfg == nil || len(cfg.Sensitive) == 0 {
		return
	}
	r := redact.New(cfg.Sensitive)
	for _, d := range diags {
		d.Summary = r.String(d.Summary)
		d.Detail = r.String(d.Detail)
	}
}
