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
func maskDiagnostics(diags hcl.Diagnostics, cfg *schema.Config) {
	if cfg == nil || len(cfg.Sensitive) == 0 {
		return
	}
	r := redact.New(cfg.Sensitive)
	for _, d := range diags {
		d.Summary = r.String(d.Summary)
		d.Detail = r.String(d.Detail)
	}
}
