package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/internal/kubeclient"
	"github.com/pipeline/pipeline/internal/leader"
	"github.com/pipeline/pipeline/schema"
)

// podNamespaceFile is where a pod reads its own namespace.
const podNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// startLeaderElection competes for the lease of a leader_election block
// and returns the gate the runtime's sinks obey. stop ends the election
// and releases the lease; call it after the runtime stopped writing.
func startLeaderElection(le *schema.LeaderElection, logger *slog.Logger, reg prometheus.Registerer) (lead *engine.Leadership, stop func(), err error) {
	rc, err := kubeclient.RESTConfig(le.Cluster)
	if err != nil {
		return nil, nil, fmt.Errorf("leader_election (%s): %w", le.DeclRange, err)
	}
	ns := le.Namespace
	if ns == "" {
		b, err := os.ReadFile(podNamespaceFile)
		if err != nil || strings.TrimSpace(string(b)) == "" {
			return nil, nil, fmt.Errorf("leader_election (%s): no namespace set and not running in a pod (%s unreadable); set namespace", le.DeclRange, podNamespaceFile)
		}
		ns = strings.TrimSpace(string(b))
	}
	id := leader.Identity()
	lead = engine.NewLeadership(id)
	for _, c := range lead.Collectors() {
		if err := reg.Register(c); err != nil {
			return nil, nil, fmt.Errorf("leader election metrics: %w", err)
		}
	}
	log := logger.With("node", "leader_election")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := leader.Run(ctx, leader.Config{REST: rc, Namespace: ns, Name: le.LeaseName, Identity: id,
			LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
			OnLead: lead.Lead, OnLose: lead.Lose, Logger: log}); err != nil {
			log.Error("leader election stopped; this instance never writes", "err", err)
		}
	}()
	log.Info("competing for the lease", "namespace", ns, "lease", le.LeaseName, "identity", id)
	return lead, func() { cancel(); <-done }, nil
}
