package audit

import (
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/ctyconv"
)

// Describe implements node.Describer: the trail's file. A trail is
// append-only, so plan lists the lines the initial sync would append.
func (t *target) Describe() node.TargetInfo {
	return node.TargetInfo{Location: t.cfg.path, Kind: "audit_trail", Exists: true}
}

// Show implements node.Describer: the record's value.
func (t *target) Show(e node.Entry) string { return ctyconv.String(e.Value) }

var _ node.Describer = (*target)(nil)
