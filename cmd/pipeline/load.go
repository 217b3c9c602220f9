package main

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/schema"
)

// loaded is a configuration loaded and compiled, with the files kept for
// rendering diagnostics.
type loaded struct {
	files map[string]*hcl.File
	cfg   *schema.Config
	graph *engine.Graph
	diags hcl.Diagnostics
}

func load(paths, vars []string) *loaded {
	l := schema.NewLoader()
	cfg, diags := l.Load(paths, schema.Options{Vars: vars})
	out := &loaded{files: l.Files(), cfg: cfg, diags: diags}
	if cfg == nil {
		return out
	}
	g, d := engine.Compile(cfg, registry())
	out.graph = g
	out.diags = append(out.diags, d...)
	return out
}
