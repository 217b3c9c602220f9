package manifests

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// TestGrants: rules of one resource merge their verbs, namespaces get a
// Role each (the own namespace is the install's), remote sources are not
// granted, and leader election adds create plus get/update of one Lease.
func TestGrants(t *testing.T) {
	o := Options{Mode: Hub, Namespace: "pl", Name: "pipeline",
		Leader: &schema.LeaderElection{LeaseName: "hub", LeaseDuration: 15 * time.Second}}
	needs := []Need{
		{"source.kubernetes.a", node.KubeRule{Resource: "pods", Verbs: []string{"list", "watch"}}},
		{"source.kubernetes.b", node.KubeRule{Resource: "pods", Verbs: []string{"watch", "list", "get"}}},
		{"source.kubernetes.c", node.KubeRule{Group: "apps", Resource: "deployments", Namespace: "shop", Verbs: []string{"list", "watch"}}},
		{"source.kubernetes.d", node.KubeRule{Resource: "configmaps", OwnNamespace: true, Names: []string{"cfg"}, Verbs: []string{"list", "watch"}}},
		{"source.kubernetes.e", node.KubeRule{Resource: "secrets", Verbs: []string{"list", "watch"}, Remote: true}},
		{"sink.audit.trail", node.KubeRule{Resource: "events", Namespace: "shop", Verbs: []string{"create", "patch"}}},
	}
	cluster, roles, remote := o.grants(needs)
	if d := cmp.Diff([]rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}},
		cluster.sorted()); d != "" {
		t.Errorf("ClusterRole (-want +got):\n%s", d)
	}
	got := map[string][]rbacv1.PolicyRule{}
	for _, r := range roles {
		got[r.namespace] = r.sorted()
	}
	want := map[string][]rbacv1.PolicyRule{
		"pl": {
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"cfg"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{"hub"}, Verbs: []string{"get", "update"}},
		},
		"shop": {
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"list", "watch"}},
		},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Roles (-want +got):\n%s", d)
	}
	if len(remote) != 1 {
		t.Errorf("remote = %v, want the secrets source", remote)
	}
	for _, g := range append(roles, cluster) {
		for _, r := range g.sorted() {
			for _, s := range append(append(r.Verbs, r.Resources...), r.APIGroups...) {
				if s == "*" {
					t.Errorf("wildcard in %+v", r)
				}
			}
		}
	}
}

func TestNoAPIAccessNoToken(t *testing.T) {
	out, err := Generate(Options{Mode: Agent, Namespace: "pl", Name: "pipeline", Image: "img"},
		Input{Host: []node.HostNeeds{{Capabilities: []string{"BPF"}, Paths: []string{"/sys/fs/bpf"}}},
			Files: map[string][]byte{"/x/a.hcl": []byte("# a\n")}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"automountServiceAccountToken: false", "fieldPath: metadata.name", "- BPF", "type: Unconfined", "path: /sys/fs/bpf", "a.hcl: |"} {
		if !contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if contains(out, "kind: ClusterRole") || contains(out, "kind: Role") {
		t.Errorf("a configuration that calls no API got RBAC:\n%s", out)
	}
}

func contains(b []byte, s string) bool { return strings.Contains(string(b), s) }
