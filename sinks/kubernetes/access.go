package kubernetes

import (
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/pipeline/pipeline/engine/node"
)

// KubeRules is the sink's Kubernetes permissions: get, list, watch, create and patch
// (a server-side apply that creates an object is authorized as create, one
// that changes it as patch) and delete (prune) on the written kind, in each
// of namespaces or in every namespace; a status sink patches the status
// subresource of objects that exist, so it creates and deletes nothing.
// Discovery needs no grant.
func (s *Sink) KubeRules() []node.KubeRule {
	gvk := s.obj.gvk
	if gvk.Kind == "" {
		return nil // validate reported it
	}
	// RBAC names resources, the configuration a kind: without discovery,
	// the kind's conventional plural.
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	remote := s.cluster != nil && !s.cluster.InCluster
	namespaces := s.namespaces
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	var out []node.KubeRule
	for _, ns := range namespaces {
		if s.status {
			out = append(out,
				node.KubeRule{Group: gvk.Group, Resource: plural.Resource, Namespace: ns, Verbs: []string{"get", "list", "watch"}, Remote: remote},
				node.KubeRule{Group: gvk.Group, Resource: plural.Resource + "/status", Namespace: ns, Verbs: []string{"patch"}, Remote: remote})
			continue
		}
		out = append(out, node.KubeRule{Group: gvk.Group, Resource: plural.Resource, Namespace: ns,
			Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}, Remote: remote})
	}
	return out
}

// Needs implements node.Access (KubeRules).
func (s *Sink) Needs() node.Needs { return node.Needs{Kube: s.KubeRules()} }

var _ node.Access = (*Sink)(nil)
