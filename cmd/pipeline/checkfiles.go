package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/internal/kubeclient"
	"github.com/pipeline/pipeline/schema"
)

// fileChecker is a built node that reads files at run time and can read
// them now for `validate --check-files` (source "files": its patterns
// match, its files parse).
type fileChecker interface {
	CheckFiles() hcl.Diagnostics
}

// checkFiles reads what a run would read besides the configuration:
// each cluster's kubeconfig, ca_cert and token_file, and the files of every
// node that implements fileChecker. validate alone never reads them, so a
// configuration validates in CI where its secrets are not mounted.
func checkFiles(cfg *schema.Config, g *graph.Graph) hcl.Diagnostics {
	var diags hcl.Diagnostics
	names := make([]string, 0, len(cfg.Clusters))
	for name := range cfg.Clusters {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		diags = append(diags, checkClusterFiles(cfg.Clusters[name])...)
	}
	if g == nil {
		return diags
	}
	for _, n := range g.Nodes {
		if fc, ok := n.Impl().(fileChecker); ok {
			diags = append(diags, fc.CheckFiles()...)
		}
	}
	return diags
}

// checkClusterFiles loads a cluster's credentials as a client would. The
// service account of in_cluster exists only inside a pod: not checked.
func checkClusterFiles(c *schema.Cluster) hcl.Diagnostics {
	if c.InCluster {
		return nil
	}
	var problems []string
	if _, err := kubeclient.RESTConfig(c); err != nil {
		msg := strings.TrimPrefix(err.Error(), "load credentials: ")
		problems = append(problems, strings.TrimPrefix(msg, fmt.Sprintf("cluster %q: ", c.Name)))
	}
	if c.TokenFile != "" {
		switch b, err := os.ReadFile(c.TokenFile); {
		case err != nil:
			problems = append(problems, fmt.Sprintf("token_file: %v", err))
		case len(strings.TrimSpace(string(b))) == 0:
			problems = append(problems, fmt.Sprintf("token_file: %s is empty", c.TokenFile))
		}
	}
	var diags hcl.Diagnostics
	for _, p := range problems {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot load cluster credentials",
			Detail:  fmt.Sprintf("cluster %q: %s. run and plan read these files; mount them, or validate without --check-files.", c.Name, strings.TrimSuffix(p, ".")),
			Subject: c.DeclRange.Ptr()})
	}
	return diags
}
