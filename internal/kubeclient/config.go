// Package kubeclient turns a cluster block into a client-go configuration.
// It is shared by the kubernetes source, the audit sink's Events and leader
// election (cmd/pipeline); connecting, discovery and watching belong to
// sources/kubernetes.
package kubeclient

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/pipeline/pipeline/schema"
)

// Client-side rate limits when no cluster block sets them.
const (
	DefaultQPS   = 50
	DefaultBurst = 100
)

// ErrNoCredentials means no source of Kubernetes credentials exists: no
// kubeconfig file where one was looked for, and not in a pod.
var ErrNoCredentials = errors.New("no Kubernetes credentials")

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
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
		if clientcmd.IsEmptyConfig(err) {
			return nil, fmt.Errorf("%w: with no cluster block it looked for %s, and for a pod's "+
				"service account (KUBERNETES_SERVICE_HOST is unset); none exists. Set cluster = cluster.NAME with a "+
				"cluster block (kubeconfig, in_cluster or endpoint), or set KUBECONFIG", ErrNoCredentials, lookedAt(rules))
		}
	case c.InCluster:
		cfg, err = rest.InClusterConfig()
		if errors.Is(err, rest.ErrNotInCluster) {
			return nil, fmt.Errorf("%w: cluster %q sets in_cluster = true, but this process does not run in a pod "+
				"(KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are unset)", ErrNoCredentials, c.Name)
		}
	case c.Endpoint != "":
		var ca []byte
		if ca, err = c.CACertPEM(); err != nil {
			return nil, fmt.Errorf("load credentials: %w", err)
		}
		cfg = &rest.Config{Host: c.Endpoint, TLSClientConfig: rest.TLSClientConfig{CAData: ca},
			BearerToken: c.Token, BearerTokenFile: c.TokenFile}
	default:
		if _, serr := os.Stat(c.Kubeconfig); errors.Is(serr, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: cluster %q names the kubeconfig %s, which does not exist", ErrNoCredentials, c.Name, c.Kubeconfig)
		}
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

// lookedAt names the kubeconfig files the default rules read: $KUBECONFIG's
// entries when it is set, else ~/.kube/config.
func lookedAt(rules *clientcmd.ClientConfigLoadingRules) string {
	files := rules.GetLoadingPrecedence()
	if os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != "" {
		return fmt.Sprintf("the kubeconfig files of $KUBECONFIG (%s)", strings.Join(files, ", "))
	}
	return fmt.Sprintf("$KUBECONFIG (unset), then %s", strings.Join(files, ", "))
}
