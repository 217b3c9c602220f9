package kubernetes

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	kschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/kobject"
	"github.com/pipeline/pipeline/schema"
)

// serviceAccountNamespace is where a pod reads its own namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// Source is a configured source "kubernetes". NewSource only decodes; Run
// connects, resolves the resource and watches it.
type Source struct {
	address string
	cluster *schema.Cluster // nil: in-cluster or kubeconfig, decided at Run
	target  target
	keyer   *kobject.Keyer
	pruner  *kobject.Pruner
	proj    *node.Paths // what the source decodes; nil: whole objects (see Project)
	shape   *shape      // what the graph reads, the part of proj a record's value holds (packed.go)
	opts    options
	// nsFile holds the pod's namespace for namespaced_watch; tests point it elsewhere.
	nsFile string
	// eventHook, set by tests, sees every event of our lister's watches
	// before the reflector does, in the stream's goroutine.
	eventHook func(watch.EventType)

	mu      sync.Mutex
	current *watcher // the running watch, for Lookup
}

// target is what to watch, as configured.
type target struct {
	resource, group, version string // resource form
	apiVersion, kind         string // kind form
	namespace                string
	ownNamespace             bool
	name                     string
	labelSelector            string
	fieldSelector            string
}

type options struct {
	metadataOnly    bool
	cached          bool
	cacheTTL        time.Duration
	syncChanges     bool
	watchList       bool // initial_sync = "watch_list"
	disconnectAfter time.Duration
	healthCheck     time.Duration
}

type decoder struct {
	c     *schema.Content
	diags hcl.Diagnostics
}

func (d *decoder) add(diags hcl.Diagnostics) { d.diags = append(d.diags, diags...) }

func (d *decoder) errorf(rng hcl.Range, summary, format string, args ...any) {
	d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary,
		Detail: fmt.Sprintf(format, args...), Subject: rng.Ptr()})
}

func newSource(b node.Build) (node.Source, hcl.Diagnostics) {
	d := &decoder{c: b.Content}
	s := &Source{address: b.Address, nsFile: serviceAccountNamespace}
	s.cluster = d.cluster(b.Config)
	s.target = d.target()
	sel, diags := kobject.DecodeSelector(b.Content)
	d.add(diags)
	s.target.labelSelector = sel.String()
	fsel, diags := kobject.DecodeFieldSelector(b.Content)
	d.add(diags)
	s.target.fieldSelector = fsel.String()
	s.keyer, diags = kobject.DecodeIndexBy(b.Content)
	d.add(diags)
	s.pruner, diags = kobject.DecodeIgnoreFields(b.Content)
	d.add(diags)
	s.opts = d.options()
	return s, d.diags
}

// cluster resolves cluster = cluster.NAME against the loaded cluster blocks.
func (d *decoder) cluster(cfg *schema.Config) *schema.Cluster {
	if !clusterAttr.Has(d.c) {
		return nil
	}
	tr, rng, diags := clusterAttr.Get(d.c)
	d.add(diags)
	if diags.HasErrors() {
		return nil
	}
	name := ""
	if len(tr) == 2 && tr.RootName() == "cluster" {
		if a, ok := tr[1].(hcl.TraverseAttr); ok {
			name = a.Name
		}
	}
	if name == "" {
		d.errorf(rng, "Invalid cluster reference", "cluster must name a cluster block, such as cluster.prod.")
		return nil
	}
	var clusters map[string]*schema.Cluster
	if cfg != nil {
		clusters = cfg.Clusters
	}
	if c, ok := clusters[name]; ok {
		return c
	}
	names := slices.Sorted(maps.Keys(clusters))
	detail := fmt.Sprintf("No cluster block named %q is declared.", name)
	if s := schema.DidYouMean(name, names); s != "" {
		detail += fmt.Sprintf(" Did you mean cluster.%s?", s)
	} else if len(names) > 0 {
		detail += " Declared clusters: " + strings.Join(names, ", ") + "."
	} else {
		detail += " Declare it with a cluster \"" + name + "\" { ... } block, or remove cluster to use the default credentials."
	}
	d.errorf(rng, "Reference to undeclared cluster", "%s", detail)
	return nil
}

func (d *decoder) target() target {
	var t target
	t.resource = resourceAttr.Read(d.c, &d.diags)
	t.group = groupAttr.Read(d.c, &d.diags)
	t.version = versionAttr.Read(d.c, &d.diags)
	t.apiVersion = apiVersionAttr.Read(d.c, &d.diags)
	t.kind = kindAttr.Read(d.c, &d.diags)
	switch {
	case t.resource == "" && t.kind == "":
		d.errorf(d.c.Range, "Missing resource", "Set resource (a plural name such as \"pods\", with optional group and version) or api_version and kind.")
	case t.resource != "" && t.kind != "":
		d.errorf(kindAttr.Range(d.c), "Conflicting resource and kind", "Set resource or api_version + kind, not both.")
	case t.resource != "":
		if strings.ToLower(t.resource) != t.resource || strings.ContainsAny(t.resource, "/ ") {
			d.errorf(resourceAttr.Range(d.c), "Invalid resource", "resource is the lower-case plural name, such as \"pods\" or \"deployments\"; for a kind write api_version and kind.")
		}
		if t.apiVersion != "" {
			d.errorf(apiVersionAttr.Range(d.c), "Conflicting resource and api_version", "With resource, use group and version instead of api_version.")
		}
	default:
		if t.group != "" || t.version != "" {
			rng := groupAttr.Range(d.c)
			if t.group == "" {
				rng = versionAttr.Range(d.c)
			}
			d.errorf(rng, "Conflicting kind and group",
				"With kind, write the group and version in api_version, such as \"apps/v1\".")
		}
		if t.apiVersion == "" {
			d.errorf(kindAttr.Range(d.c), "Missing api_version", "kind needs api_version, such as \"v1\" or \"apps/v1\".")
		} else if _, err := kschema.ParseGroupVersion(t.apiVersion); err != nil {
			d.errorf(apiVersionAttr.Range(d.c), "Invalid api_version", "%s. Write \"v1\" or \"GROUP/VERSION\".", err)
		}
	}
	d.namespace(&t)
	return t
}

func (d *decoder) namespace(t *target) {
	t.namespace = namespaceAttr.Read(d.c, &d.diags)
	t.ownNamespace = ownNamespaceAttr.Read(d.c, &d.diags)
	if t.ownNamespace && t.namespace != "" {
		d.errorf(ownNamespaceAttr.Range(d.c), "Conflicting namespace settings", "Set namespace or namespaced_watch = true, not both.")
	}
	t.name = nameAttr.Read(d.c, &d.diags)
	if nameAttr.Has(d.c) && t.name == "" {
		d.errorf(nameAttr.Range(d.c), "Empty name", "name must name one object; remove it to watch every object.")
	}
}

func (d *decoder) options() options {
	var o options
	o.metadataOnly = metadataOnlyAttr.Read(d.c, &d.diags)
	o.cached = storeAttr.Read(d.c, &d.diags) == "cached"
	if o.cached && o.metadataOnly {
		d.errorf(storeAttr.Range(d.c), "Conflicting store and metadata_only",
			"store = \"cached\" keeps only names and keys to save memory; with metadata_only the objects are already that small. Remove one of them.")
	}
	o.cacheTTL = cacheTTLAttr.Read(d.c, &d.diags)
	if o.cacheTTL <= 0 {
		d.errorf(cacheTTLAttr.Range(d.c), "Invalid cache_ttl", "cache_ttl must be positive.")
	}
	o.watchList = initialSyncAttr.Read(d.c, &d.diags) == "watch_list"
	o.syncChanges = syncChangesAttr.Read(d.c, &d.diags)
	o.disconnectAfter = disconnectAfterAttr.Read(d.c, &d.diags)
	if o.disconnectAfter <= 0 {
		d.errorf(disconnectAfterAttr.Range(d.c), "Invalid disconnect_after", "disconnect_after must be positive.")
	}
	o.healthCheck = healthCheckAttr.Read(d.c, &d.diags)
	if o.healthCheck < 0 {
		d.errorf(healthCheckAttr.Range(d.c), "Invalid health_check_interval", "health_check_interval must be zero (off) or positive.")
	}
	return o
}
