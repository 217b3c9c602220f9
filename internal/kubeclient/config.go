// Package kubeclient turns a cluster block into a client-go configuration.
// It is shared by the kubernetes source and leader election (cmd/pipeline);
// connecting, discovery and watching belong to sources/kubernetes.
package kubeclient

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/pipeline/pipeline/schema"
)

// Client-side rate limits when no cluster block sets them.
const (
	DefaultQPS   = 50
	DefaultBurst = 100
)

// RESTConfig builds the client configuration of a cluster block; nil means
// the default credentials: the pod's service account when
// KUBERNETES_SERVICE_HOST is set, else $KUBECONFIG or ~/.kube/config.
func RESTConfig(c *schema.Cluster) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	qps, burst := float32(DefaultQPS), DefaultBurst
	switch {
	case c == nil && os.Getenv("KUBERNETES_SERVICE_HOST") != "":
		cfg, err = rest.InClusterConfig()
	case c == nil:
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
	case c.InCluster:
		cfg, err = rest.InClusterConfig()
	case c.Endpoint != "":
		cfg = &rest.Config{Host: c.Endpoint, TLSClientConfig: rest.TLSClientConfig{CAData: c.CACert},
			BearerToken: c.Token, BearerTokenFile: c.TokenFile}
	default:
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: c.Kubeconfig},
			&clientcmd.ConfigOverrides{CurrentContext: c.Context}).ClientConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("load credentials: %w", err)
	}
	if c != nil {
		qps, burst = c.QPS, c.Burst
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = qps, burst
	cfg.UserAgent = "pipeline"
	return cfg, nil
}
