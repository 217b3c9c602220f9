package audit

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

var (
	pathAttr = schema.String("path").Required().
			Doc("File the trail is appended to, one JSON object per line. Rotated files get a numeric suffix.").
			Example(`"/var/log/pipeline/audit.jsonl"`)
	maxSizeAttr = schema.Size("max_size").Default(100<<20, `"100MiB"`).
			Doc("Size at which the file is rotated.")
	maxFilesAttr = schema.Int("max_files").Default(10, "10").
			Doc("Rotated files kept; older ones are deleted.")
	includeValuesAttr = schema.Bool("include_values").Default(true, "true").
				Doc("Record each change's value, not only its key. Sensitive attributes are never recorded.")
	hashChainAttr = schema.Bool("hash_chain").Default(true, "true").
			Doc("Chain every line to the previous one with SHA-256 so `pipeline audit verify` detects edits and truncation.")
)

// Spec declares sink "audit".
func Spec() node.Spec {
	body := schema.Block{Attrs: []schema.Attribute{pathAttr, maxSizeAttr, maxFilesAttr, includeValuesAttr, hashChainAttr}}
	return node.Spec{
		Kind:    node.KindSink,
		Type:    "audit",
		Summary: "Appends every change to a tamper-evident JSON-lines trail.",
		Body:    body,
		Status:  node.Planned,
		New: func(b node.Build) (any, hcl.Diagnostics) {
			return node.PlannedSink{Address: b.Address}, body.Check(b.Content)
		},
	}
}
