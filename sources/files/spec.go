package files

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/hashicorp/hcl/v2"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/kobject"
	"github.com/pipeline/pipeline/schema"
)

// Attributes of source "files". selector, index_by and ignore_fields are
// shared with source "kubernetes" (internal/kobject).
var (
	pathsAttr = schema.StringList("paths").Required().
			Doc("Glob patterns of the files to read, relative to the configuration's directory. With format \"kubernetes\", a YAML file may hold several documents separated by `---`, and a `kind: List` is expanded.").
			Example(`["manifests/*.yaml", "extra/pods.json"]`)
	kindAttr = schema.String("kind").
			Doc("Only objects of this kind.").Example(`"Pod"`)
	apiVersionAttr = schema.String("api_version").
			Doc("Only objects of this apiVersion.").Example(`"v1"`)
	allowEmptyAttr = schema.Bool("allow_empty").Default(false, "false").
			Doc("Whether a pattern may match no file. When false (the default), a pattern that matches nothing is an error: at start the source fails (plan stops at once and names the pattern; run retries with backoff, not synced, so no sink prunes), and later it keeps the files the pattern matched last, so a deleted or unmounted directory empties nothing. When true, an empty match is an empty, synced source.")
	formatAttr = schema.Enum("format", formats...).Default(formatKubernetes, `"kubernetes"`).
			Doc("How files are read. \"kubernetes\": Kubernetes objects in YAML or JSON, keyed by namespace/name (or index_by). " +
			"The others read plain data items, each keyed by the key expression: \"json\" (one value per file; an array holds one item per element), " +
			"\"jsonl\" (one JSON value per line), \"yaml\" (every document; a sequence holds one item per element), " +
			"\"csv\" (the first row names the columns; each later row is an object of strings) and " +
			"\"lines\" (each line, trimmed, is a string; blank lines and lines starting with # are skipped). " +
			"Such a source emits records, so a sink can read it directly.").
		Example(`"csv"`)
	keyAttr = schema.Expr("key", "item").
		Doc("The record key of each item, for every format but \"kubernetes\" (which uses index_by): a string, or a number converted to its decimal text. " +
			"`item` is the item read. Required, except with format \"lines\", where an item is its own key. " +
			"An item whose key fails, is null or empty, or repeats an earlier item's key is skipped, counted and logged with its file and line.").
		Example(`item.ip`)
	pollAttr = schema.Duration("poll_interval").Default(30*time.Second, `"30s"`).
			Doc("Interval of a full re-read in case a change notification was missed (content hashes make it cheap). \"0s\" disables it.")
)

// Spec declares source "files".
func Spec() node.Spec {
	return node.Spec{
		Kind:    node.KindSource,
		Type:    "files",
		Summary: "Kubernetes objects, or JSON, JSON Lines, YAML, CSV or text items, read from files and re-read when they change.",
		Doc: "With format \"kubernetes\" (the default), each object becomes a record keyed by namespace/name (or index_by) whose value is the object after ignore_fields, " +
			"exactly as source \"kubernetes\" emits it. The directories are watched; after a change (debounced by 100ms) " +
			"the whole state is recomputed and only the difference is published. A document that is not a Kubernetes object " +
			"is skipped, counted and logged with its file and index. When two documents have the same key, the one with the " +
			"smallest namespace/name provides the value, as with source \"kubernetes\" (equal names: the first by file path, then position).\n\n" +
			"With another format, each item becomes a record keyed by the key expression whose value is the item. An item that does not " +
			"parse (a JSON Lines line, a CSV row with the wrong number of fields) is skipped, counted and logged with its file and line; " +
			"when the item is in a file that parsed before, the file keeps its last good content until it parses again. " +
			"When two items have the same key, the first by file path, then position, provides it.",
		Body: schema.Block{
			Attrs: []schema.Attribute{pathsAttr, kindAttr, apiVersionAttr, kobject.SelectorAttr,
				kobject.IndexByAttr, kobject.IgnoreFieldsAttr, formatAttr, keyAttr, allowEmptyAttr, pollAttr},
			Blocks: []*schema.BlockType{kobject.SelectorBlock},
		},
		Output: node.Objects,
		Outputs: []node.OutputCase{
			{Attr: "format", Values: []string{formatKubernetes}, Output: node.Objects},
			{Attr: "format", Values: formats[1:], Output: node.Records},
		},
		NewSource: newSource,
	}
}

// Source is a configured source "files".
type Source struct {
	address    string
	patterns   []string  // absolute glob patterns
	pathsRange hcl.Range // for validate --check-files
	kind       string
	apiVersion string
	selector   labels.Selector
	keyer      *kobject.Keyer
	pruner     *kobject.Pruner
	poll       time.Duration
	allowEmpty bool
	format     string
	key        hcl.Expression   // nil: format kubernetes, or lines keyed by themselves
	keyCtx     *hcl.EvalContext // var, local and the functions, for key
}

// Emits implements node.Emitter: Kubernetes objects, or records with
// another format.
func (s *Source) Emits() node.DataType {
	if s.format == formatKubernetes {
		return node.Objects
	}
	return node.Records
}

func newSource(b node.Build) (node.Source, hcl.Diagnostics) {
	s := &Source{address: b.Address}
	paths, rng, diags := pathsAttr.Get(b.Content)
	s.pathsRange = rng
	if len(paths) == 0 && !diags.HasErrors() {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "No paths",
			Detail: "paths needs at least one glob pattern, such as \"manifests/*.yaml\".", Subject: rng.Ptr()})
	}
	dir := "."
	if b.Config != nil && b.Config.Dir != "" {
		dir = b.Config.Dir
	}
	for _, p := range paths {
		if _, err := filepath.Match(p, ""); err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid glob pattern",
				Detail: fmt.Sprintf("paths entry %q: %s. Use *, ? and [...] as in shell globs.", p, err), Subject: rng.Ptr()})
			continue
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		abs, err := filepath.Abs(p)
		if err == nil {
			p = abs
		}
		s.patterns = append(s.patterns, p)
	}
	var d hcl.Diagnostics
	s.kind = kindAttr.Read(b.Content, &diags)
	s.apiVersion = apiVersionAttr.Read(b.Content, &diags)
	s.selector, d = kobject.DecodeSelector(b.Content)
	diags = append(diags, d...)
	s.keyer, d = kobject.DecodeIndexBy(b.Content)
	diags = append(diags, d...)
	s.pruner, d = kobject.DecodeIgnoreFields(b.Content)
	diags = append(diags, d...)
	s.allowEmpty = allowEmptyAttr.Read(b.Content, &diags)
	diags = append(diags, s.decodeFormat(b.Content)...)
	s.poll, rng, d = pollAttr.Get(b.Content)
	diags = append(diags, d...)
	if s.poll < 0 {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid poll_interval",
			Detail: "poll_interval must be zero (off) or positive.", Subject: rng.Ptr()})
	}
	return s, diags
}

// decodeFormat reads format and key, and refuses the attributes of the
// other kind of format: the object attributes with a data format, key
// with format kubernetes.
func (s *Source) decodeFormat(c *schema.Content) hcl.Diagnostics {
	var diags hcl.Diagnostics
	var rng hcl.Range
	s.format, rng, diags = formatAttr.Get(c)
	if diags.HasErrors() {
		s.format = formatKubernetes
		return diags
	}
	s.keyCtx = c.Ctx
	if s.keyCtx == nil {
		s.keyCtx = &hcl.EvalContext{}
	}
	if s.format == formatKubernetes {
		if keyAttr.Has(c) {
			_, krng, _ := keyAttr.Get(c)
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "key needs a data format",
				Detail:  "key keys the items of format \"json\", \"jsonl\", \"yaml\", \"csv\" or \"lines\". Kubernetes objects are keyed by namespace/name, or by index_by.",
				Subject: krng.Ptr()})
		}
		return diags
	}
	for _, a := range []interface {
		Has(*schema.Content) bool
		Name() string
	}{kindAttr, apiVersionAttr, kobject.SelectorAttr, kobject.IndexByAttr, kobject.IgnoreFieldsAttr} {
		if a.Has(c) {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: a.Name() + " needs format \"kubernetes\"",
				Detail:  fmt.Sprintf("%s applies to Kubernetes objects. With format %q, key each item with key, and select items with a transform \"filter\" or \"extract\" (where).", a.Name(), s.format),
				Subject: c.Attrs[a.Name()].NameRange.Ptr()})
		}
	}
	if bs := kobject.SelectorBlock.Get(c); len(bs) > 0 {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "selector needs format \"kubernetes\"",
			Detail:  fmt.Sprintf("selector blocks apply to Kubernetes objects. With format %q, select items with a transform \"filter\" or \"extract\" (where).", s.format),
			Subject: bs[0].Range.Ptr()})
	}
	var d hcl.Diagnostics
	s.key, _, d = keyAttr.Get(c)
	diags = append(diags, d...)
	if s.key == nil && s.format != formatLines && !d.HasErrors() {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Missing key",
			Detail:  fmt.Sprintf("format %q needs key, an expression of item that gives each item's record key, such as key = item.id.", s.format),
			Subject: rng.Ptr()})
	}
	return diags
}
