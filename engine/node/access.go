package node

// KubeRule is one permission a node needs on the Kubernetes API, in RBAC
// terms. `pipeline manifests` turns the rules of every node of a compiled
// graph into exactly the Roles and ClusterRoles the configuration needs.
type KubeRule struct {
	Group    string // API group; "" is the core group
	Resource string // plural resource name: "pods"
	// Namespace limits the rule to one namespace (a Role); empty means
	// every namespace or a cluster-scoped resource (a ClusterRole).
	Namespace string
	// OwnNamespace is the namespace the pipeline's pod runs in (a Role
	// there); Namespace is then empty.
	OwnNamespace bool
	// Names limits the rule to these objects (RBAC resourceNames).
	Names []string
	Verbs []string
	// Remote is set when the node connects with credentials of its own (a
	// cluster block with kubeconfig or endpoint): the pod's service
	// account is not used, so the manifests only mention the rule.
	Remote bool
}

// KubeAccess is implemented by nodes that call the Kubernetes API.
type KubeAccess interface {
	// KubeRules returns every permission the node uses, never a wildcard.
	// It does no I/O: it reads only the decoded configuration.
	KubeRules() []KubeRule
}

// HostNeeds is what a node needs from the host it runs on.
type HostNeeds struct {
	// Capabilities are Linux capabilities without the CAP_ prefix: "BPF".
	Capabilities []string
	// Paths are host directories the node reads or writes, such as the
	// bpffs mount /sys/fs/bpf.
	Paths []string
}

// HostAccess is implemented by nodes that need the host (eBPF maps), so
// `pipeline manifests` grants those capabilities and mounts those paths.
type HostAccess interface {
	// HostNeeds returns the node's needs. It does no I/O.
	HostNeeds() HostNeeds
}
