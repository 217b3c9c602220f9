package natskv

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

var (
	urlAttr = schema.String("url").Required().
		Doc("NATS server URL(s), comma separated.").Example(`"nats://nats.pipeline.svc:4222"`)
	bucketAttr = schema.String("bucket").Required().
			Doc("Key-value bucket; created when absent.").Example(`"pod-ips"`)
	prefixAttr = schema.String("key_prefix").Default("", `""`).
			Doc("Prefix of every key written; prune never touches keys outside it.")
	historyAttr = schema.Int("history").Default(1, "1").Doc("Revisions kept per key when the bucket is created.")
	storageAttr = schema.Enum("storage", "file", "memory").Default("file", `"file"`).Doc("Storage of a created bucket.")
	credsAttr   = schema.String("credentials_file").Doc("NATS credentials (.creds) file. Its content is never printed or logged.")
	tokenAttr   = schema.String("token").Sensitive().Doc("Authentication token; prefer credentials_file.")
)

// Spec declares sink "nats_kv".
func Spec() node.Spec {
	body := schema.Block{Attrs: []schema.Attribute{urlAttr, bucketAttr, prefixAttr, historyAttr, storageAttr, credsAttr, tokenAttr}}
	return node.Spec{
		Kind:    node.KindSink,
		Type:    "nats_kv",
		Summary: "Mirrors records into a NATS JetStream key-value bucket.",
		Accepts: []node.DataType{node.Records},
		Body:    body,
		Status:  node.Planned,
		New: func(b node.Build) (any, hcl.Diagnostics) {
			return node.PlannedSink{Address: b.Address}, body.Check(b.Content)
		},
	}
}
