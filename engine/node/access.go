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

// HostNeeds is what a node needs from the host it runs on.
type HostNeeds struct {
	// Capabilities are Linux capabilities without the CAP_ prefix: "BPF".
	Capabilities []string
	// Paths are host directories the node reads or writes, such as the
	// bpffs mount /sys/fs/bpf.
	Paths []string
}

// Needs is what a node needs from outside the pipeline.
type Needs struct {
	// Kube is every permission the node uses on the Kubernetes API, never
	// a wildcard.
	Kube []KubeRule
	// Host is what it needs of the host (eBPF maps, shared files).
	Host HostNeeds
}

// Access is implemented by a node that calls the Kubernetes API or needs
// the host, so that `pipeline manifests` grants exactly those permissions,
// capabilities and paths. Needs does no I/O: it reads only the decoded
// configuration.
type Access interface {
	Needs() Needs
}
