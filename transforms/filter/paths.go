package filter

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/node"
)

// ObjectPaths implements node.ObjectReader: the paths of record.value that
// where reads (record.key reads no field of the object).
func (t *Transform) ObjectPaths() (*node.Paths, hcl.Diagnostics) {
	rec := &node.Paths{}
	whole := node.ExprPaths(rec, "record", t.where, nil)
	if rec.Whole() {
		return node.WholeObject(), node.WholeObjectWarnings(whole)
	}
	p := &node.Paths{}
	if v, ok := rec.Field("value"); ok {
		if v.Whole() {
			return node.WholeObject(), nil
		}
		p.Merge(v)
	}
	return p, nil
}

var _ node.ObjectReader = (*Transform)(nil)
