package graceperiod

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/node"
)

// ObjectPaths implements node.ObjectReader: the transform passes objects
// on without reading them, so only its consumers' reads count.
func (t *Transform) ObjectPaths() (*node.Paths, hcl.Diagnostics) { return &node.Paths{}, nil }

var _ node.ObjectReader = (*Transform)(nil)
