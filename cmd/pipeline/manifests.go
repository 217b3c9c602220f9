package main

import (
	"fmt"
	"maps"
	"slices"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"

	"github.com/pipeline/pipeline/cmd/pipeline/view"
	"github.com/pipeline/pipeline/deploy/manifests"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

type manifestFlags struct {
	vars       []string
	opts       manifests.Options
	privileged bool
}

func newManifestsCmd() *cobra.Command {
	var f manifestFlags
	cmd := &cobra.Command{
		Use:   "manifests [--mode agent|hub] [--namespace NS] [--image REF] PATH...",
		Short: "Print the Kubernetes objects that run the configuration, with exactly the RBAC it needs",
		Long: "Compiles the configuration and prints a ServiceAccount, the Roles and ClusterRole its sources\n" +
			"and sinks need (never a wildcard), their bindings, a ConfigMap holding the configuration files,\n" +
			"and a DaemonSet (agent: one instance per node, eBPF access) or a Deployment (hub: two replicas\n" +
			"with leader election). Apply with kubectl apply -f.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l := load(args, f.vars)
			if l.diags.HasErrors() {
				view.WriteDiagsText(cmd.ErrOrStderr(), l.files, l.diags)
				return exitError{1}
			}
			warnings := append(kubeconfigWarnings(l.cfg), ownerValueWarnings(l.cfg)...)
			view.WriteDiagsText(cmd.ErrOrStderr(), l.files, append(l.diags, warnings...)) // warnings only
			f.opts.Leader = l.cfg.LeaderElection
			f.opts.Privileged = f.privileged
			out, err := manifests.Generate(f.opts, manifestInput(l))
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.vars, "var", nil, "set a variable: -var name=value (repeatable)")
	fl.StringVar(&f.opts.Mode, "mode", manifests.Agent, "agent (a DaemonSet, one instance per node) or hub (a Deployment of two replicas with leader election)")
	fl.StringVar(&f.opts.Namespace, "namespace", "pipeline", "namespace of the objects")
	fl.StringVar(&f.opts.Name, "name", "pipeline", "name of the service account, roles, ConfigMap (NAME-config) and workload")
	fl.StringVar(&f.opts.Image, "image", "ghcr.io/pipeline/pipeline:"+imageTag(), "container image")
	fl.StringVar(&f.opts.Seccomp, "seccomp", "", "seccomp profile: RuntimeDefault or Unconfined (default: Unconfined when a sink needs CAP_BPF, else RuntimeDefault)")
	fl.BoolVar(&f.privileged, "privileged", false, "run the container privileged (not needed by any node type)")
	return cmd
}

// kubeconfigWarnings warns of each cluster block that reads a kubeconfig
// file: the pod gets only the configuration files (the ConfigMap at
// /etc/pipeline) and its service account, so ~/.kube/config does not
// exist there and the source would fail at start.
func kubeconfigWarnings(cfg *schema.Config) hcl.Diagnostics {
	names := slices.Sorted(maps.Keys(cfg.Clusters))
	var diags hcl.Diagnostics
	for _, name := range names {
		c := cfg.Clusters[name]
		if c.Kubeconfig == "" {
			continue
		}
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Kubeconfig not in the pod",
			Detail: fmt.Sprintf("cluster %q reads the kubeconfig %s, which these manifests do not put in the pod: it gets only the "+
				"configuration files (at /etc/pipeline) and its service account, bound to the RBAC printed here, so the sources "+
				"using it would fail at start. For the cluster the pipeline runs in, set in_cluster = true, or leave out cluster: "+
				"a source without one uses the pod's service account (and $KUBECONFIG or ~/.kube/config outside a pod). For "+
				"another cluster, mount its kubeconfig or token from a Secret and point kubeconfig or token_file at the mount.", c.Name, c.Kubeconfig),
			Subject: c.DeclRange.Ptr()})
	}
	return diags
}

// ownerValueWarnings warns of each kubernetes sink that leaves out
// owner_value: its default identity hashes the configuration directory's
// path, which in the pod is /etc/pipeline for every pipeline these
// manifests deploy (two of them with a sink of the same name would own
// each other's objects) and differs from the directory planned from here.
func ownerValueWarnings(cfg *schema.Config) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, n := range cfg.Nodes {
		if n.Kind != schema.KindSink || n.Type != "kubernetes" {
			continue
		}
		content, _, _ := n.Body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "owner_value"}}})
		if content != nil && content.Attributes["owner_value"] != nil {
			continue
		}
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Sink identity from the directory",
			Detail: fmt.Sprintf("%s sets no owner_value, so its identity (the label value it lists, updates and prunes by) is derived from "+
				"the configuration directory's path. In the pod that is %s, the same for every pipeline deployed this way, and not "+
				"the directory you plan from. Set owner_value to a name no other pipeline in the cluster uses, such as %q.",
				n.Address(), "/etc/pipeline", "TEAM."+n.Name),
			Subject: n.DeclRange.Ptr()})
	}
	return diags
}

// imageTag is the image tag matching this binary.
func imageTag() string {
	if version == "dev" || version == "" {
		return "latest"
	}
	return version
}

// manifestInput collects what the compiled graph's nodes declare.
func manifestInput(l *loaded) manifests.Input {
	in := manifests.Input{Files: map[string][]byte{}}
	for _, n := range l.graph.Nodes {
		a, ok := n.Impl().(node.Access)
		if !ok {
			continue
		}
		needs := a.Needs()
		for _, r := range needs.Kube {
			in.Needs = append(in.Needs, manifests.Need{Address: n.Address, Rule: r})
		}
		if len(needs.Host.Capabilities)+len(needs.Host.Paths) > 0 {
			in.Host = append(in.Host, needs.Host)
		}
	}
	for name, f := range l.cfg.Files {
		in.Files[name] = f.Bytes
	}
	return in
}
