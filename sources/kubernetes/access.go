package kubernetes

import (
	"k8s.io/apimachinery/pkg/api/meta"
	kschema "k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/pipeline/pipeline/engine/node"
)

// KubeRules is the source's Kubernetes permissions: list and watch of the watched
// resource in its namespace (or every namespace), limited to the named
// object of a single-resource watch, and get for store = "cached", whose
// lookups fetch objects. Discovery, the access review and /readyz need no
// grant: every authenticated user may call them.
func (s *Source) KubeRules() []node.KubeRule {
	t := s.target
	group, resource := t.group, t.resource
	if t.kind != "" {
		gv, err := kschema.ParseGroupVersion(t.apiVersion)
		if err != nil {
			return nil // validate reported it
		}
		// RBAC names resources, the configuration a kind: without
		// discovery, the kind's conventional plural.
		plural, _ := meta.UnsafeGuessKindToResource(gv.WithKind(t.kind))
		group, resource = gv.Group, plural.Resource
	}
	verbs := []string{"list", "watch"}
	if s.opts.cached {
		verbs = append(verbs, "get")
	}
	r := node.KubeRule{Group: group, Resource: resource, Namespace: t.namespace, OwnNamespace: t.ownNamespace,
		Verbs: verbs, Remote: s.cluster != nil && !s.cluster.InCluster}
	if t.name != "" {
		r.Names = []string{t.name}
	}
	return []node.KubeRule{r}
}

// Needs implements node.Access (KubeRules).
func (s *Source) Needs() node.Needs { return node.Needs{Kube: s.KubeRules()} }

var _ node.Access = (*Source)(nil)
