package nats

import (
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/natsconn"
	"github.com/pipeline/pipeline/schema"
)

var (
	subjectAttr = schema.Expr("subject", "record").Required().
			Doc("Subject of each message, an expression over the record (`record.key`, `record.value`). A delete goes to the subject of the key's last upsert. A record whose subject does not evaluate to a valid subject is skipped and counted.").
			Example(`"pods.${replace(record.key, ".", "_")}"`)
	jetstreamAttr = schema.Bool("jetstream").Default(false, "false").
			Doc("Publish through JetStream: each message waits for the stream's acknowledgement and is retried until acknowledged, with the same Nats-Msg-Id so the stream drops duplicates (within its duplicate window, 2m by default). A stream must capture the subjects. With false, messages are published with core NATS: a batch counts as sent once the server confirmed it received the batch (a flush), but a message can still be lost (no subscriber, a subscriber too slow, the server failing before it forwarded it) and one can be sent twice when a flush times out and the batch is retried.")
	inFlightAttr = schema.Int("max_in_flight").Default(1024, "1024").
			Doc("JetStream publishes awaiting acknowledgement at once.")
	ackTimeoutAttr = schema.Duration("ack_timeout").Default(5*time.Second, `"5s"`).
			Doc("How long a batch waits for acknowledgements (JetStream) or for the flush (core). Messages not confirmed in time are retried by the engine with backoff.")
)

// Spec declares sink "nats".
func Spec() node.Spec {
	attrs := append([]schema.Attribute{subjectAttr, jetstreamAttr, inFlightAttr, ackTimeoutAttr}, natsconn.Attrs()...)
	body := schema.Block{Attrs: attrs, Blocks: natsconn.Blocks()}
	return node.Spec{
		Kind:    node.KindSink,
		Type:    "nats",
		Summary: "Publishes every change to a NATS subject (core or JetStream).",
		Doc: "Each upsert and delete becomes one message whose body is JSON: " +
			"`{\"op\":\"upsert\",\"key\":…,\"value\":…,\"source\":…,\"generation\":…,\"time\":…}` " +
			"(`value` is absent for a delete; `source` is the input's address; `generation` numbers the messages this sink " +
			"published since it started, a retry keeping its number; `time` is when it was published, RFC 3339). Headers: `Pipeline-Op` (upsert or delete), " +
			"`Pipeline-Key` and `Nats-Msg-Id`. The sink is append-only: a restart re-publishes the current state " +
			"once the input syncs.",
		Accepts: []node.DataType{node.Records},
		Body:    body,
		NewSink: newSink,
	}
}

// Sink is a configured nats sink.
type Sink struct {
	address    string
	source     string
	conn       natsconn.Config
	subject    hcl.Expression
	ctx        *hcl.EvalContext
	jetstream  bool
	inFlight   int
	ackTimeout time.Duration
}

func newSink(b node.Build) (node.Sink, hcl.Diagnostics) {
	s := &Sink{address: b.Address, ctx: b.Content.Ctx}
	if b.Input != nil {
		s.source = b.Input.Address
	}
	conn, diags := natsconn.Decode(b.Content, b.Config.Dir)
	s.conn = conn
	add := func(d hcl.Diagnostics) { diags = append(diags, d...) }
	var d hcl.Diagnostics
	s.subject = subjectAttr.Read(b.Content, &diags)
	s.jetstream = jetstreamAttr.Read(b.Content, &diags)
	n, rng, d := inFlightAttr.Get(b.Content)
	add(d)
	if !d.HasErrors() && (n < 1 || n > 1<<16) {
		add(hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Value out of range",
			Detail: "max_in_flight must be between 1 and 65536.", Subject: rng.Ptr()}})
	}
	s.inFlight = int(n)
	s.ackTimeout = ackTimeoutAttr.Read(b.Content, &diags)
	return s, diags
}
