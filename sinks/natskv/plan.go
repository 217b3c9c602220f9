package natskv

import (
	"fmt"

	"github.com/pipeline/pipeline/engine/node"
)

// Describe implements node.Describer: the bucket and key prefix. A bucket
// Open did not find is one run would create (create_bucket) or fail on.
func (t *Target) Describe() node.TargetInfo {
	loc := "bucket " + t.s.bucket
	if t.s.prefix != "" {
		loc += fmt.Sprintf(" (prefix %s)", t.s.prefix)
	}
	return node.TargetInfo{Location: loc, Kind: "kv_bucket", Exists: t.kv != nil}
}

// Show implements node.Describer: the JSON the bucket holds.
func (t *Target) Show(e node.Entry) string { return string(e.Data) }

var _ node.Describer = (*Target)(nil)
