package audit

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/redact"
	"github.com/pipeline/pipeline/schema"
)

var (
	pathAttr = schema.String("path").Required().
			Doc("File the trail is appended to, one JSON object per line; `\"-\"` writes to standard output (no rotation, retention or checkpoint). Rotated files get a numeric suffix (`audit.jsonl.1`, `.2`, …, oldest first). Created with mode 0600.").
			Example(`"/var/log/pipeline/audit.jsonl"`)
	maxSizeAttr = schema.Size("max_size").Default(100<<20, `"100MiB"`).
			Doc("Size at which the file is rotated. The first line of the new file links to the last hash of the rotated one.")
	maxFilesAttr = schema.Int("max_files").Default(10, "10").
			Doc("Rotated files kept; older ones are deleted, and each deletion is itself a line carrying the hash it cuts at. 0 keeps every file.")
	maxAgeAttr = schema.Duration("max_age").Default(0, `"0s"`).
			Doc("Rotated files whose last write is older than this are deleted (with a retention line, as for max_files). \"0s\" keeps them regardless of age.")
	includeValuesAttr = schema.Bool("include_values").Default(true, "true").
				Doc("Record each change's value. With false, only a SHA-256 digest of the value is recorded. Sensitive values are never recorded either way.")
	fsyncAttr = schema.Enum("fsync", "always", "interval", "never").Default("interval", `"interval"`).
			Doc("When the trail is flushed to disk: `always` before a write is reported done, `interval` every fsync_interval, `never` leaves it to the kernel.")
	fsyncIntervalAttr = schema.Duration("fsync_interval").Default(time.Second, `"1s"`).
				Doc("Flush period of fsync = \"interval\", and the period of the checkpoint and the max_age check.")
	failAttr = schema.Enum("fail", "open", "closed").Default("open", `"open"`).
			Doc("What a failed trail write does. `open`: the failure is counted, logged and shown in health, the failed lines are retried, and the other sinks go on. `closed`: every other sink of the graph holds its writes until the trail accepts lines again, so nothing is changed unaudited.")
	redactAttr = schema.StringList("redact").Default(nil, "[]").
			Doc("JSONPath expressions of fields removed from every line before it is written, rooted at the line: `$.value.labels`, `$.source.uid`, `$.value.containers[*].env`. Only fields under `$.value`, `$.source` and `$.detail` can be removed.").
			Example(`["$.value.annotations"]`)
	checkpointAttr = schema.String("checkpoint").Default("", `""`).
			Doc("File holding the trail's head (seq, hash, line count), replaced atomically after each flush; `pipeline audit verify` uses it to detect lines cut off the end. Defaults to the path plus `.checkpoint`.")
)

// Spec declares sink "audit".
func Spec() node.Spec {
	body := schema.Block{Attrs: []schema.Attribute{pathAttr, maxSizeAttr, maxFilesAttr, maxAgeAttr, includeValuesAttr,
		fsyncAttr, fsyncIntervalAttr, failAttr, redactAttr, checkpointAttr}, Blocks: []*schema.BlockType{eventsBlock}}
	return node.Spec{
		Kind:    node.KindSink,
		Type:    "audit",
		Summary: "Appends every change and every engine decision to a tamper-evident JSON-lines trail.",
		Doc: "Each line is chained to the one before it with SHA-256; `pipeline audit verify` checks the chain across rotated " +
			"files and the checkpoint and names the first broken line. See the README's \"Audit trail\" section for the line format.",
		Body:    body,
		NewSink: newSink,
	}
}

// config is a decoded audit block.
type config struct {
	path, checkpoint string
	maxSize          int64
	maxFiles         int
	maxAge           time.Duration
	values           bool
	fsync            fsyncMode
	interval         time.Duration
	closed           bool
	redact           []jsonPath
	secrets          *redact.Redactor // the configuration's sensitive text
	events           *eventsConfig    // nil without an events block
}

func newSink(b node.Build) (node.Sink, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	get := func(d hcl.Diagnostics) { diags = append(diags, d...) }
	var c config
	var d hcl.Diagnostics
	var rng hcl.Range
	c.path = pathAttr.Read(b.Content, &diags)
	c.maxSize, rng, d = maxSizeAttr.Get(b.Content)
	get(d)
	if c.maxSize < 1024 && !d.HasErrors() {
		get(hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid value for max_size",
			Detail: "A trail file must be allowed at least 1KiB; write a size such as \"100MiB\".", Subject: rng.Ptr()}})
	}
	n, rng, d := maxFilesAttr.Get(b.Content)
	get(d)
	if n < 0 {
		get(hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid value for max_files",
			Detail: "Write 0 to keep every file, or the number of rotated files to keep.", Subject: rng.Ptr()}})
	}
	c.maxFiles = int(n)
	c.maxAge = maxAgeAttr.Read(b.Content, &diags)
	c.values = includeValuesAttr.Read(b.Content, &diags)
	mode := fsyncAttr.Read(b.Content, &diags)
	c.fsync = fsyncModes[mode]
	c.interval, rng, d = fsyncIntervalAttr.Get(b.Content)
	get(d)
	if c.interval <= 0 && !d.HasErrors() {
		get(hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid value for fsync_interval",
			Detail: "The flush period must be positive, such as \"1s\".", Subject: rng.Ptr()}})
	}
	fail := failAttr.Read(b.Content, &diags)
	c.closed = fail == "closed"
	paths, rng, d := redactAttr.Get(b.Content)
	get(d)
	for _, p := range paths {
		jp, err := parseJSONPath(p)
		if err != nil {
			get(hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid redact path",
				Detail: fmt.Sprintf("%q: %s.", p, err), Subject: rng.Ptr()}})
			continue
		}
		c.redact = append(c.redact, jp)
	}
	c.checkpoint = checkpointAttr.Read(b.Content, &diags)
	c.events, d = decodeEvents(b)
	get(d)
	c.resolve(b)
	return &Sink{address: b.Address, cfg: c, gate: newGate(c.closed)}, diags
}

// resolve makes paths absolute from the configuration's directory and picks
// up the configuration's sensitive values, which no line may contain.
func (c *config) resolve(b node.Build) {
	if b.Config == nil {
		return
	}
	c.secrets = redact.New(b.Config.Sensitive)
	abs := func(p string) string {
		if p == "" || p == "-" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(b.Config.Dir, p)
	}
	c.path, c.checkpoint = abs(c.path), abs(c.checkpoint)
}
