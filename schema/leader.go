package schema

import (
	"fmt"
	"time"

	"github.com/hashicorp/hcl/v2"
)

// LeaderElection is the top-level leader_election block: when it is set,
// several instances of one configuration run side by side, every one keeps
// its sources synced, and only the holder of a Kubernetes Lease writes to
// the sinks.
type LeaderElection struct {
	// Cluster is the referenced cluster block; nil means the default
	// credentials (the pod's service account, else the kubeconfig).
	Cluster *Cluster
	// Namespace of the Lease; empty means the pod's own namespace.
	Namespace     string
	LeaseName     string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	DeclRange     hcl.Range
}

// leader_election block attributes.
var (
	leaderCluster = Ref("cluster", "cluster").
			Doc("The cluster block holding the Lease, as a reference. Absent: the pod's service account when KUBERNETES_SERVICE_HOST is set, else $KUBECONFIG or ~/.kube/config.").
			Example("cluster.prod")
	leaderNamespace = String("namespace").Default("", `""`).
			Doc("Namespace of the Lease; empty is the namespace the pod runs in (read from its service account).").Example(`"pipeline"`)
	leaderLeaseName = String("lease_name").Default("pipeline", `"pipeline"`).
			Doc("Name of the coordination.k8s.io Lease the instances compete for; instances of one configuration share it.")
	leaderLeaseDuration = Duration("lease_duration").Default(15*time.Second, `"15s"`).
				Doc("How long a follower waits after the last renewal it saw before it takes the lease over. A crashed leader is replaced within this.")
	leaderRenewDeadline = Duration("renew_deadline").Default(10*time.Second, `"10s"`).
				Doc("How long the leader keeps trying to renew before it stops writing and gives up. Shorter than lease_duration, so a leader that lost the lease has stopped writing before anyone else can start.")
	leaderRetryPeriod = Duration("retry_period").Default(2*time.Second, `"2s"`).
				Doc("Interval between attempts to acquire or renew the lease.")
)

// LeaderElectionBlock is the schema of the leader_election block, for docs.
var LeaderElectionBlock = Block{Attrs: []Attribute{leaderCluster, leaderNamespace, leaderLeaseName,
	leaderLeaseDuration, leaderRenewDeadline, leaderRetryPeriod}}

func decodeLeaderElection(blk *hcl.Block, cfg *Config) (*LeaderElection, hcl.Diagnostics) {
	le := &LeaderElection{DeclRange: blk.DefRange}
	content, diags := Decode(blk.Body, LeaderElectionBlock, cfg.Ctx, blk.DefRange)
	cfg.Sensitive = append(cfg.Sensitive, LeaderElectionBlock.SensitiveValues(content)...)
	add := func(d hcl.Diagnostics) { diags = append(diags, d...) }
	var d, timing hcl.Diagnostics
	if leaderCluster.Has(content) {
		tr, rng, d := leaderCluster.Get(content)
		add(d)
		if !d.HasErrors() {
			le.Cluster, d = cfg.LookupCluster(tr, rng)
			add(d)
		}
	}
	le.Namespace = leaderNamespace.Read(content, &diags)
	le.LeaseName = leaderLeaseName.Read(content, &diags)
	var durRange, renewRange, retryRange hcl.Range
	le.LeaseDuration, durRange, d = leaderLeaseDuration.Get(content)
	timing = append(timing, d...)
	le.RenewDeadline, renewRange, d = leaderRenewDeadline.Get(content)
	timing = append(timing, d...)
	le.RetryPeriod, retryRange, d = leaderRetryPeriod.Get(content)
	timing = append(timing, d...)
	add(timing)
	if timing.HasErrors() {
		return le, diags
	}
	// client-go's own checks, as diagnostics pointing at the attribute.
	bad := func(rng hcl.Range, detail string) {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid leader election timing",
			Detail: detail, Subject: rng.Ptr()})
	}
	switch {
	case le.RetryPeriod <= 0:
		bad(retryRange, "retry_period must be positive.")
	case le.RenewDeadline <= time.Duration(1.2*float64(le.RetryPeriod)):
		bad(renewRange, fmt.Sprintf("renew_deadline (%s) must be longer than 1.2 x retry_period (%s), so that several renewals fit in it.", le.RenewDeadline, le.RetryPeriod))
	case le.LeaseDuration <= le.RenewDeadline:
		bad(durRange, fmt.Sprintf("lease_duration (%s) must be longer than renew_deadline (%s): the leader stops writing after renew_deadline, and no one else may start before lease_duration.", le.LeaseDuration, le.RenewDeadline))
	}
	if le.LeaseName == "" {
		rng := content.Range
		if a, ok := content.Attrs["lease_name"]; ok {
			rng = a.Expr.Range()
		}
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Empty lease_name",
			Detail: "lease_name names the Lease the instances compete for; remove it to use \"pipeline\".", Subject: rng.Ptr()})
	}
	return le, diags
}

// LookupCluster resolves a reference such as cluster.prod to its cluster
// block, with a diagnostic naming the declared clusters when it is unknown.
func (c *Config) LookupCluster(tr hcl.Traversal, rng hcl.Range) (*Cluster, hcl.Diagnostics) {
	name := ""
	if len(tr) == 2 && tr.RootName() == "cluster" {
		if a, ok := tr[1].(hcl.TraverseAttr); ok {
			name = a.Name
		}
	}
	if name == "" {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid cluster reference",
			Detail: "cluster must name a cluster block, such as cluster.prod.", Subject: rng.Ptr()}}
	}
	if cl, ok := c.Clusters[name]; ok {
		return cl, nil
	}
	names := make([]string, 0, len(c.Clusters))
	for n := range c.Clusters {
		names = append(names, n)
	}
	detail := fmt.Sprintf("No cluster block named %q is declared.", name)
	if s := DidYouMean(name, names); s != "" {
		detail += fmt.Sprintf(" Did you mean cluster.%s?", s)
	}
	return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Reference to undeclared cluster", Detail: detail, Subject: rng.Ptr()}}
}
