package kubernetes

import (
	"strings"

	"github.com/pipeline/pipeline/engine/node"
)

// Noun implements node.Noun: the watched kind in the singular, for plan's
// "from pod shop/web-1".
func (s *Source) Noun() string {
	if s.target.kind != "" {
		return strings.ToLower(s.target.kind)
	}
	r := s.target.resource
	switch {
	case strings.HasSuffix(r, "sses"), strings.HasSuffix(r, "xes"):
		return strings.TrimSuffix(r, "es")
	case strings.HasSuffix(r, "ies"):
		return strings.TrimSuffix(r, "ies") + "y"
	}
	return strings.TrimSuffix(r, "s")
}

var _ node.Noun = (*Source)(nil)
