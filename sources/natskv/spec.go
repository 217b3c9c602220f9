package natskv

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/natsconn"
	"github.com/pipeline/pipeline/schema"
)

var (
	bucketAttr = schema.String("bucket").Required().Doc("Key-value bucket to watch. The source waits (pending) while it does not exist.").Example(`"pod-ips"`)
	prefixAttr = schema.String("key_prefix").Default("", `""`).
			Doc("Only keys under this prefix; it is stripped from the record keys, and escaped characters are restored (`v1.fd00=3A=3A1` becomes `fd00::1`).").Example(`"v1."`)
)

// Spec declares source "nats_kv".
func Spec() node.Spec {
	body := schema.Block{Attrs: append([]schema.Attribute{bucketAttr, prefixAttr}, natsconn.Attrs()...), Blocks: natsconn.Blocks()}
	return node.Spec{
		Kind:    node.KindSource,
		Type:    "nats_kv",
		Summary: "Watches the records of a NATS JetStream key-value bucket.",
		Doc: "The source emits the bucket's current values, then marks itself synced (also for an empty bucket), then " +
			"every update and delete. Values are JSON (what sink \"nats_kv\" writes); a value that is not JSON is skipped " +
			"and logged. After the connection comes back the watch is created again and the source's state is replaced " +
			"by the bucket's: only real differences flow downstream, so a server restart causes no churn. " +
			"pipeline_source_nats_kv_revision_lag is how many revisions of the watched keys the server still had to " +
			"deliver after the last one applied, as the server said with that delivery.",
		Body:      body,
		Output:    node.Records,
		NewSource: newSource,
	}
}

// Source is a configured nats_kv source.
type Source struct {
	address string
	conn    natsconn.Config
	bucket  string
	prefix  string
}

func newSource(b node.Build) (node.Source, hcl.Diagnostics) {
	s := &Source{address: b.Address}
	conn, diags := natsconn.Decode(b.Content, b.Config.Dir)
	s.conn = conn
	bucket := bucketAttr.Read(b.Content, &diags)
	prefix, rng, d := prefixAttr.Get(b.Content)
	diags = append(diags, d...)
	if why := natsconn.ValidPrefix(prefix); why != "" {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid key prefix",
			Detail: "key_prefix: " + why + ". Use letters, digits and - _ / = . such as \"v1.\".", Subject: rng.Ptr()})
	}
	s.bucket, s.prefix = bucket, prefix
	return s, diags
}

var _ node.Source = (*Source)(nil)
