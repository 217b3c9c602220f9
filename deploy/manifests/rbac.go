package manifests

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pipeline/pipeline/engine/node"
)

// Need is one node's permission, with the address of the node that needs
// it (shown in the manifests' comments).
type Need struct {
	Address string
	Rule    node.KubeRule
}

// grant is the rules of one Role (namespace set) or the ClusterRole.
type grant struct {
	namespace string // "" for the ClusterRole
	rules     map[string]*rbacv1.PolicyRule
	why       []string
}

func (g *grant) add(group, resource string, names, verbs []string, why string) {
	k := group + "\x00" + resource + "\x00" + strings.Join(names, ",")
	r, ok := g.rules[k]
	if !ok {
		r = &rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, ResourceNames: names}
		g.rules[k] = r
	}
	for _, v := range verbs {
		if !slices.Contains(r.Verbs, v) {
			r.Verbs = append(r.Verbs, v)
		}
	}
	sort.Strings(r.Verbs)
	if !slices.Contains(g.why, why) {
		g.why = append(g.why, why)
	}
}

func (g *grant) sorted() []rbacv1.PolicyRule {
	keys := make([]string, 0, len(g.rules))
	for k := range g.rules {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]rbacv1.PolicyRule, 0, len(keys))
	for _, k := range keys {
		out = append(out, *g.rules[k])
	}
	return out
}

// grants turns the needs (and the lease of leader election) into one
// ClusterRole for cluster-wide rules and one Role per namespace. Remote
// needs use other credentials and are returned apart.
func (o Options) grants(needs []Need) (cluster *grant, roles []*grant, remote []string) {
	cluster = &grant{rules: map[string]*rbacv1.PolicyRule{}}
	byNS := map[string]*grant{}
	role := func(ns string) *grant {
		if byNS[ns] == nil {
			byNS[ns] = &grant{namespace: ns, rules: map[string]*rbacv1.PolicyRule{}}
		}
		return byNS[ns]
	}
	for _, n := range needs {
		r := n.Rule
		why := fmt.Sprintf("%s: %s %s", n.Address, strings.Join(r.Verbs, ", "), resourceName(r.Group, r.Resource))
		switch {
		case r.Remote:
			remote = append(remote, why+" (with its own cluster credentials)")
		case r.OwnNamespace:
			role(o.Namespace).add(r.Group, r.Resource, r.Names, r.Verbs, why)
		case r.Namespace != "":
			role(r.Namespace).add(r.Group, r.Resource, r.Names, r.Verbs, why)
		default:
			cluster.add(r.Group, r.Resource, r.Names, r.Verbs, why)
		}
	}
	if le := o.Leader; le != nil {
		g := role(o.leaseNamespace())
		why := fmt.Sprintf("leader_election: the Lease %q", le.LeaseName)
		// create cannot be limited by name: the name is not known before
		// the object exists.
		g.add("coordination.k8s.io", "leases", nil, []string{"create"}, why)
		g.add("coordination.k8s.io", "leases", []string{le.LeaseName}, []string{"get", "update"}, why)
	}
	nss := make([]string, 0, len(byNS))
	for ns := range byNS {
		nss = append(nss, ns)
	}
	sort.Strings(nss)
	for _, ns := range nss {
		roles = append(roles, byNS[ns])
	}
	return cluster, roles, remote
}

func resourceName(group, resource string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}

// rbacDocs returns the Roles, ClusterRole and their bindings to the
// service account.
func (o Options) rbacDocs(needs []Need) ([]doc, []string) {
	cluster, roles, remote := o.grants(needs)
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: o.Name, Namespace: o.Namespace}}
	var out []doc
	if len(cluster.rules) > 0 {
		name := o.Name + "-" + o.Namespace // ClusterRoles are cluster-wide: one per installation
		out = append(out,
			doc{why: cluster.why, obj: &rbacv1.ClusterRole{TypeMeta: typeMeta("rbac.authorization.k8s.io/v1", "ClusterRole"),
				ObjectMeta: o.meta(name, ""), Rules: cluster.sorted()}},
			doc{obj: &rbacv1.ClusterRoleBinding{TypeMeta: typeMeta("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
				ObjectMeta: o.meta(name, ""), Subjects: subject,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}}})
	}
	for _, g := range roles {
		name := o.Name
		if g.namespace != o.Namespace {
			name += "-" + o.Namespace // another installation may hold a Role there
		}
		out = append(out,
			doc{why: g.why, obj: &rbacv1.Role{TypeMeta: typeMeta("rbac.authorization.k8s.io/v1", "Role"),
				ObjectMeta: o.meta(name, g.namespace), Rules: g.sorted()}},
			doc{obj: &rbacv1.RoleBinding{TypeMeta: typeMeta("rbac.authorization.k8s.io/v1", "RoleBinding"),
				ObjectMeta: o.meta(name, g.namespace), Subjects: subject,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}}})
	}
	return out, remote
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}
