package main

import (
	"regexp"

	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// loaded is a configuration loaded and compiled, with the files kept for
// rendering diagnostics.
type loaded struct {
	files map[string]*hcl.File
	cfg   *schema.Config
	graph *graph.Graph
	diags hcl.Diagnostics
}

func load(paths, vars []string) *loaded {
	return loadWith(paths, schema.Options{Vars: vars}, registry())
}

// loadWith is load with every option and a registry (tests set the
// environment and add test-only node types).
func loadWith(paths []string, opts schema.Options, reg *node.Registry) *loaded {
	l := schema.NewLoader()
	cfg, diags := l.Load(paths, opts)
	out := &loaded{files: l.Files(), cfg: cfg, diags: diags}
	defer func() { positions(out.diags); maskDiagnostics(out.diags, out.cfg) }()
	if cfg == nil {
		return out
	}
	g, d := graph.Compile(cfg, reg)
	out.graph = g
	// A derived diagnostic restates an error of the load (a failed variable).
	out.diags = dedupe(schema.DropDerived(append(out.diags, d...)))
	return out
}

// rangeText matches a range as hcl.Range's String writes it inside
// messages of the HCL library ("file:7,3-9", "file:7,3-8,1").
var rangeText = regexp.MustCompile(`([^\s:]+):(\d+),(\d+)-\d+(?:,\d+)?\b`)

// positions rewrites ranges in diagnostic texts to file:line:col, the one
// way every message names a position.
func positions(diags hcl.Diagnostics) {
	for _, d := range diags {
		d.Summary = rangeText.ReplaceAllString(d.Summary, "$1:$2:$3")
		d.Detail = rangeText.ReplaceAllString(d.Detail, "$1:$2:$3")
	}
}

// dedupe drops repeated diagnostics, such as the same error reported once
// per iteration of a for expression.
func dedupe(diags hcl.Diagnostics) hcl.Diagnostics {
	type key struct {
		sev             hcl.DiagnosticSeverity
		summary, detail string
		subject         hcl.Range
	}
	seen := map[key]bool{}
	out := make(hcl.Diagnostics, 0, len(diags))
	for _, d := range diags {
		k := key{sev: d.Severity, summary: d.Summary, detail: d.Detail}
		if d.Subject != nil {
			k.subject = *d.Subject
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, d)
		}
	}
	return out
}
