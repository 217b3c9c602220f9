package natskv

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

var (
	urlAttr = schema.String("url").Required().
		Doc("NATS server URL(s), comma separated.").Example(`"nats://nats.pipeline.svc:4222"`)
	bucketAttr = schema.String("bucket").Required().Doc("Key-value bucket to watch.").Example(`"pod-ips"`)
	prefixAttr = schema.String("key_prefix").Default("", `""`).Doc("Only keys under this prefix; it is stripped from the record keys.")
	credsAttr  = schema.String("credentials_file").Doc("NATS credentials (.creds) file. Its content is never printed or logged.")
	tokenAttr  = schema.String("token").Sensitive().Doc("Authentication token; prefer credentials_file.")
)

// Spec declares source "nats_kv".
func Spec() node.Spec {
	body := schema.Block{Attrs: []schema.Attribute{urlAttr, bucketAttr, prefixAttr, credsAttr, tokenAttr}}
	return node.Spec{
		Kind:    node.KindSource,
		Type:    "nats_kv",
		Summary: "Watches the records of a NATS JetStream key-value bucket.",
		Body:    body,
		Output:  node.Records,
		Status:  node.Planned,
		New: func(b node.Build) (any, hcl.Diagnostics) {
			return node.PlannedSource{Address: b.Address}, body.Check(b.Content)
		},
	}
}
