package kubernetes

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/node"
)

// identityPaths are decoded whatever the graph reads: the informer keys
// objects by namespace/name, compares resourceVersions, and the record's
// origin names the object.
var identityPaths = [][]string{
	{"apiVersion"}, {"kind"},
	{"metadata", "name"}, {"metadata", "namespace"}, {"metadata", "uid"}, {"metadata", "resourceVersion"},
}

// Project implements node.Projector: the source decodes only the paths the
// graph reads, its own index_by paths and the object's identity. It warns
// about ignore_fields paths that an expression reads (they would read as
// absent).
func (s *Source) Project(p *node.Paths) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, pre := range s.pruner.Prefixes() {
		if len(pre.Fields) == 0 || p.Whole() || !readsBelow(p, pre.Fields) {
			continue
		}
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Ignored field is read",
			Detail: fmt.Sprintf("ignore_fields removes %s from every object of %s, but an expression of the graph reads .%s or a field below it, so what it reads will always be absent. Remove it from ignore_fields, or stop reading it.",
				pre.Expr, s.address, strings.Join(pre.Fields, ".")),
			Subject: rangePtr(pre.Range)})
	}
	if p.Whole() {
		s.proj = nil
		return diags
	}
	diags = append(diags, s.checkSchema(p)...)
	s.shape = newShape(p)
	proj := &node.Paths{}
	proj.Merge(p)
	for _, path := range identityPaths {
		proj.Add(path...)
	}
	for _, path := range s.keyer.Prefixes() {
		proj.Add(path...)
	}
	s.proj = proj
	if proj.Whole() {
		s.proj = nil
	}
	return diags
}

// Projection returns the paths the source decodes; nil means whole objects.
func (s *Source) Projection() *node.Paths { return s.proj }

// readsBelow reports whether p reads path itself or something below it (a
// whole parent of path does not count: reading .spec whole while ignoring
// .spec.x is the point of ignore_fields).
func readsBelow(p *node.Paths, path []string) bool {
	for _, f := range path {
		if p.Whole() {
			return false
		}
		c, ok := p.Field(f)
		if !ok {
			return false
		}
		p = c
	}
	return true
}

func rangePtr(r hcl.Range) *hcl.Range {
	if r.Filename == "" {
		return nil
	}
	return &r
}
