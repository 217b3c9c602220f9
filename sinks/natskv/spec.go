package natskv

import (
	"strconv"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/natsconn"
	"github.com/pipeline/pipeline/schema"
)

var (
	bucketAttr = schema.String("bucket").Required().
			Doc("Key-value bucket; created when absent (unless create = false).").Example(`"pod-ips"`)
	prefixAttr = schema.String("key_prefix").Default("", `""`).
			Doc("Prefix of every key written; Actual reads and prune deletes only keys under it, so several sinks can share a bucket.").Example(`"v1."`)
	createAttr  = schema.Bool("create").Default(true, "true").Doc("Create the bucket when absent. When present, its settings are compared with these and differences are logged by name.")
	historyAttr = schema.Int("history").Default(1, "1").Doc("Revisions kept per key when the bucket is created (1 to 64).")
	storageAttr = schema.Enum("storage", "file", "memory").Default("file", `"file"`).Doc("Storage of a created bucket.")
	replicaAttr = schema.Int("replicas").Default(1, "1").Doc("Replicas of a created bucket in a JetStream cluster (1 to 5).")
	ttlAttr     = schema.Duration("ttl").Default(0, `"0s"`).Doc("Age after which the server drops a value of a created bucket; 0s keeps values for ever. Keep it 0 for a mirror: the sink rewrites expired keys only at the next full reconcile.")
	maxAttr     = schema.Size("max_bytes").Default(0, "0").Doc("Size limit of a created bucket, such as \"1GiB\"; 0 is unlimited. A write into a full bucket fails per key (counted, retried, the sink shows degraded) while other sinks go on.")
	purgeAttr   = schema.Duration("purge_deletes").Default(30*time.Minute, `"30m"`).
			Doc("Delete markers (tombstones) older than this are purged from the bucket, checked at each full reconcile, so that deleted keys do not pile up. \"0s\" never purges.")
	timeoutAttr = schema.Duration("write_timeout").Default(5*time.Second, `"5s"`).
			Doc("How long one batch waits for the server's acknowledgements. A write that times out has an unknown outcome: the key is read back before it is reported failed.")
)

// Spec declares sink "nats_kv".
func Spec() node.Spec {
	attrs := append([]schema.Attribute{bucketAttr, prefixAttr, createAttr, historyAttr, storageAttr, replicaAttr, ttlAttr, maxAttr, purgeAttr, timeoutAttr},
		natsconn.Attrs()...)
	body := schema.Block{Attrs: attrs, Blocks: natsconn.Blocks()}
	return node.Spec{
		Kind:    node.KindSink,
		Type:    "nats_kv",
		Summary: "Mirrors records into a NATS JetStream key-value bucket.",
		Doc: "Level-triggered like ebpf_map: at start and at every `resync` the sink reads the keys under `key_prefix` " +
			"with their values and writes only the difference; between reconciles it writes the changed keys. " +
			"Values are the records' JSON with sorted keys. A record key is escaped where KV forbids a character " +
			"(`fd00::1` is stored as `fd00=3A=3A1`); source \"nats_kv\" reverses it. " +
			"Connection health shows on /readyz (degraded while reconnecting, down while the connection is dialled again) " +
			"and in pipeline_node_nats_connected.",
		Accepts: []node.DataType{node.Records},
		Body:    body,
		NewSink: newSink,
	}
}

// Sink is a configured nats_kv sink. It holds no connection: Open does.
type Sink struct {
	address      string
	conn         natsconn.Config
	bucket       string
	prefix       string
	create       bool
	cfg          jetstream.KeyValueConfig
	purgeDeletes time.Duration
	timeout      time.Duration
}

func newSink(b node.Build) (node.Sink, hcl.Diagnostics) {
	s := &Sink{address: b.Address}
	var diags hcl.Diagnostics
	add := func(d hcl.Diagnostics) { diags = append(diags, d...) }
	var d hcl.Diagnostics
	s.conn, d = natsconn.Decode(b.Content, b.Config.Dir)
	add(d)
	bucket, bucketRange, d := bucketAttr.Get(b.Content)
	add(d)
	if bucket != "" && !validBucket(bucket) {
		add(hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid bucket name",
			Detail: "A bucket name holds only letters, digits, - and _.", Subject: bucketRange.Ptr()}})
	}
	prefix, prefixRange, d := prefixAttr.Get(b.Content)
	add(d)
	if why := natsconn.ValidPrefix(prefix); why != "" {
		add(hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid key prefix",
			Detail: "key_prefix: " + why + ". Use letters, digits and - _ / = . such as \"v1.\".", Subject: prefixRange.Ptr()}})
	}
	s.bucket, s.prefix = bucket, prefix
	s.create = createAttr.Read(b.Content, &diags)
	s.cfg, d = bucketConfig(b.Content, bucket)
	add(d)
	s.purgeDeletes = purgeAttr.Read(b.Content, &diags)
	s.timeout = timeoutAttr.Read(b.Content, &diags)
	return s, diags
}

func bucketConfig(c *schema.Content, bucket string) (jetstream.KeyValueConfig, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	intIn := func(a *schema.Attr[int64], lo, hi int64) int64 {
		v, rng, d := a.Get(c)
		diags = append(diags, d...)
		if !d.HasErrors() && (v < lo || v > hi) {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Value out of range",
				Detail: a.Name() + " must be between " + itoa(lo) + " and " + itoa(hi) + ".", Subject: rng.Ptr()})
		}
		return v
	}
	cfg := jetstream.KeyValueConfig{Bucket: bucket, Storage: jetstream.FileStorage}
	cfg.History = uint8(intIn(historyAttr, 1, 64))
	cfg.Replicas = int(intIn(replicaAttr, 1, 5))
	storage := storageAttr.Read(c, &diags)
	if storage == "memory" {
		cfg.Storage = jetstream.MemoryStorage
	}
	cfg.TTL = ttlAttr.Read(c, &diags)
	maxBytes := maxAttr.Read(c, &diags)
	cfg.MaxBytes = maxBytes
	if maxBytes == 0 {
		cfg.MaxBytes = -1
	}
	return cfg, diags
}

func validBucket(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
