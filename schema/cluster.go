package schema

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Cluster holds the credentials of one Kubernetes API server, from a
// cluster "NAME" block. Token is secret: it never reaches a log, an error,
// plan output or a metric.
type Cluster struct {
	// sensitive holds the raw text of the block's sensitive values (the
	// token, whatever a sensitive variable computed) for views to mask.
	sensitive  []string
	Name       string
	Kubeconfig string
	Context    string
	InCluster  bool
	Endpoint   string
	CACert     []byte // PEM, when given inline
	// CACertFile is the PEM file ca_cert names (absolute), read by
	// CACertPEM when a client is built (run, plan), never by validate.
	CACertFile string
	TokenFile  string
	Token      string
	QPS        float32
	Burst      int
	DeclRange  hcl.Range
}

// Cluster block attributes.
var (
	clusterKubeconfig = String("kubeconfig").Doc("Path of a kubeconfig file. `~` expands to the home directory.").Example(`"~/.kube/config"`)
	clusterContext    = String("context").Doc("Context to use from the kubeconfig; its current context when empty.")
	clusterInCluster  = Bool("in_cluster").Doc("Use the service account of the pod the pipeline runs in.")
	clusterEndpoint   = String("endpoint").Doc("URL of the API server; must be https.").Example(`"https://10.0.0.1:6443"`)
	clusterCACert     = String("ca_cert").Doc("CA certificate of the API server: inline PEM, or the path of a PEM file.")
	clusterTokenFile  = String("token_file").Doc("File holding the bearer token; re-read when it rotates.")
	clusterToken      = String("token").Sensitive().Doc("Bearer token. Prefer token_file; a token is never printed or logged.")
	clusterQPS        = Int("qps").Default(50, "50").Doc("Client-side request rate limit (requests per second).")
	clusterBurst      = Int("burst").Default(100, "100").Doc("Client-side request burst.")
)

// ClusterBlock is the schema of cluster blocks, for docs.
var ClusterBlock = Block{Attrs: []Attribute{clusterKubeconfig, clusterContext, clusterInCluster, clusterEndpoint,
	clusterCACert, clusterTokenFile, clusterToken, clusterQPS, clusterBurst}}

func decodeCluster(blk *hcl.Block, ctx *hcl.EvalContext, dir string) (*Cluster, hcl.Diagnostics) {
	c := &Cluster{Name: blk.Labels[0], DeclRange: blk.DefRange}
	content, diags := Decode(blk.Body, ClusterBlock, ctx, blk.DefRange)
	c.sensitive = ClusterBlock.SensitiveValues(content)
	get := func(d hcl.Diagnostics) { diags = append(diags, d...) }
	var d hcl.Diagnostics
	var rng hcl.Range
	c.Kubeconfig = clusterKubeconfig.Read(content, &diags)
	c.Context = clusterContext.Read(content, &diags)
	c.InCluster = clusterInCluster.Read(content, &diags)
	c.Endpoint, rng, d = clusterEndpoint.Get(content)
	get(d)
	if c.Endpoint != "" {
		diags = append(diags, checkEndpoint(c.Endpoint, rng)...)
	}
	ca := clusterCACert.Read(content, &diags)
	if ca != "" {
		c.CACert, c.CACertFile = splitPEM(ca, dir)
	}
	c.TokenFile = clusterTokenFile.Read(content, &diags)
	if c.TokenFile != "" && !filepath.IsAbs(c.TokenFile) {
		c.TokenFile = filepath.Join(dir, c.TokenFile)
	}
	c.Token, rng, d = clusterToken.Get(content)
	get(d)
	if c.Token != "" && c.TokenFile != "" {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Conflicting credentials",
			Detail: "Set token or token_file, not both.", Subject: rng.Ptr()})
	}
	qps, qrng, d := clusterQPS.Get(content)
	get(d)
	if !d.HasErrors() && (qps < 1 || qps > 100_000) {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid qps",
			Detail: "qps must be between 1 and 100000 requests per second.", Subject: qrng.Ptr()})
	}
	burst, brng, d := clusterBurst.Get(content)
	get(d)
	if !d.HasErrors() && (burst < 1 || burst > 100_000) {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid burst",
			Detail: "burst must be between 1 and 100000 requests.", Subject: brng.Ptr()})
	}
	c.QPS, c.Burst = float32(qps), int(burst)
	diags = append(diags, c.checkMode()...)
	if strings.HasPrefix(c.Kubeconfig, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			c.Kubeconfig = filepath.Join(home, c.Kubeconfig[2:])
		}
	} else if c.Kubeconfig != "" && !filepath.IsAbs(c.Kubeconfig) {
		c.Kubeconfig = filepath.Join(dir, c.Kubeconfig)
	}
	return c, diags
}

func checkEndpoint(endpoint string, rng hcl.Range) hcl.Diagnostics {
	u, err := url.Parse(endpoint)
	switch {
	case err == nil && u.Scheme == "http":
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Insecure endpoint",
			Detail: "The endpoint must be an https:// URL; plain http would send credentials in clear.", Subject: rng.Ptr()}}
	case err != nil || u.Scheme != "https" || u.Host == "":
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid endpoint",
			Detail:  fmt.Sprintf("The endpoint %q is not an https:// URL with a host, such as \"https://10.0.0.1:6443\".", endpoint),
			Subject: rng.Ptr()}}
	}
	return nil
}

func (c *Cluster) checkMode() hcl.Diagnostics {
	modes := 0
	for _, set := range []bool{c.Kubeconfig != "", c.InCluster, c.Endpoint != ""} {
		if set {
			modes++
		}
	}
	if modes == 1 {
		if c.Endpoint == "" && (c.Token != "" || c.TokenFile != "" || len(c.CACert) > 0 || c.CACertFile != "") {
			return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Credentials without endpoint",
				Detail: "ca_cert, token and token_file apply only with endpoint.", Subject: c.DeclRange.Ptr()}}
		}
		return nil
	}
	return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid cluster connection",
		Detail:  fmt.Sprintf("The cluster %q must set exactly one of kubeconfig (with an optional context), in_cluster = true, or endpoint (with ca_cert and token or token_file).", c.Name),
		Subject: c.DeclRange.Ptr()}}
}

// splitPEM is ca_cert as inline PEM, or the absolute path of its file.
func splitPEM(s, dir string) ([]byte, string) {
	if strings.Contains(s, "-----BEGIN") {
		return []byte(s), ""
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(dir, s)
	}
	return nil, s
}

// CACertPEM returns the CA certificate: inline, or read from its file now.
// Files are read when a client is built (run, plan), not by validate, so a
// configuration validates where its secrets are not mounted.
func (c *Cluster) CACertPEM() ([]byte, error) {
	if c.CACertFile == "" {
		return c.CACert, nil
	}
	b, err := readConfigFile(c.CACertFile)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: ca_cert %s: %w", c.Name, c.CACertFile, err)
	}
	if !strings.Contains(string(b), "-----BEGIN") {
		return nil, fmt.Errorf("cluster %q: ca_cert: the file %s holds no PEM block", c.Name, c.CACertFile)
	}
	return b, nil
}
