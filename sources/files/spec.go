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
			Doc("Glob patterns of YAML or JSON manifest files, relative to the configuration's directory. A YAML file may hold several documents separated by `---`; a `kind: List` is expanded.").
			Example(`["manifests/*.yaml", "extra/pods.json"]`)
	kindAttr = schema.String("kind").
			Doc("Only objects of this kind.").Example(`"Pod"`)
	apiVersionAttr = schema.String("api_version").
			Doc("Only objects of this apiVersion.").Example(`"v1"`)
	allowEmptyAttr = schema.Bool("allow_empty").Default(false, "false").
			Doc("Whether a pattern may match no file. When false (the default), a pattern that matches nothing is an error: at start the source fails (plan stops at once and names the pattern; run retries with backoff, not synced, so no sink prunes), and later it keeps the files the pattern matched last, so a deleted or unmounted directory empties nothing. When true, an empty match is an empty, synced source.")
	pollAttr = schema.Duration("poll_interval").Default(30*time.Second, `"30s"`).
			Doc("Interval of a full re-read in case a change notification was missed (content hashes make it cheap). \"0s\" disables it.")
)

// Spec declares source "files".
func Spec() node.Spec {
	return node.Spec{
		Kind:    node.KindSource,
		Type:    "files",
		Summary: "Kubernetes objects read from YAML and JSON manifest files, re-read when they change.",
		Doc: "Each object becomes a record keyed by namespace/name (or index_by) whose value is the object after ignore_fields, " +
			"exactly as source \"kubernetes\" emits it. The directories are watched; after a change (debounced by 100ms) " +
			"the whole state is recomputed and only the difference is published. A document that is not a Kubernetes object " +
			"is skipped, counted and logged with its file and index. When two documents have the same key, the one with the " +
			"smallest namespace/name provides the value, as with source \"kubernetes\" (equal names: the first by file path, then position).",
		Body: schema.Block{
			Attrs: []schema.Attribute{pathsAttr, kindAttr, apiVersionAttr, kobject.SelectorAttr,
				kobject.IndexByAttr, kobject.IgnoreFieldsAttr, allowEmptyAttr, pollAttr},
			Blocks: []*schema.BlockType{kobject.SelectorBlock},
		},
		Output:    node.Objects,
		NewSource: newSource,
	}
}

// Source is a configured source "files".
type Source struct {
	address    string
	patterns   []string // absolute glob patterns
	kind       string
	apiVersion string
	selector   labels.Selector
	keyer      *kobject.Keyer
	pruner     *kobject.Pruner
	poll       time.Duration
	allowEmpty bool
}

func newSource(b node.Build) (node.Source, hcl.Diagnostics) {
	s := &Source{address: b.Address}
	paths, rng, diags := pathsAttr.Get(b.Content)
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
	s.kind, _, d = kindAttr.Get(b.Content)
	diags = append(diags, d...)
	s.apiVersion, _, d = apiVersionAttr.Get(b.Content)
	diags = append(diags, d...)
	s.selector, d = kobject.DecodeSelector(b.Content)
	diags = append(diags, d...)
	s.keyer, d = kobject.DecodeIndexBy(b.Content)
	diags = append(diags, d...)
	s.pruner, d = kobject.DecodeIgnoreFields(b.Content)
	diags = append(diags, d...)
	s.allowEmpty, _, d = allowEmptyAttr.Get(b.Content)
	diags = append(diags, d...)
	s.poll, rng, d = pollAttr.Get(b.Content)
	diags = append(diags, d...)
	if s.poll < 0 {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid poll_interval",
			Detail: "poll_interval must be zero (off) or positive.", Subject: rng.Ptr()})
	}
	return s, diags
}
