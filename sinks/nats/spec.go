package nats

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

var (
	urlAttr = schema.String("url").Required().
		Doc("NATS server URL(s), comma separated.").Example(`"nats://nats.pipeline.svc:4222"`)
	subjectAttr = schema.Expr("subject", "record").Required().
			Doc("Subject of each message, an expression over the record.").Example(`"pods.${record.key}"`)
	jetstreamAttr = schema.Bool("jetstream").Default(false, "false").
			Doc("Publish through JetStream and wait for the stream's acknowledgement.")
	credsAttr = schema.String("credentials_file").
			Doc("NATS credentials (.creds) file. Its content is never printed or logged.")
	tokenAttr = schema.String("token").Sensitive().
			Doc("Authentication token; prefer credentials_file.")
)

// Spec declares sink "nats".
func Spec() node.Spec {
	body := schema.Block{Attrs: []schema.Attribute{urlAttr, subjectAttr, jetstreamAttr, credsAttr, tokenAttr}}
	return node.Spec{
		Kind:    node.KindSink,
		Type:    "nats",
		Summary: "Publishes every change to a NATS subject (core or JetStream).",
		Body:    body,
		Status:  node.Planned,
		New: func(b node.Build) (any, hcl.Diagnostics) {
			return node.PlannedSink{Address: b.Address}, body.Check(b.Content)
		},
	}
}
