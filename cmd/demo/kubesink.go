package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// namespacePolicies runs examples/namespace-policies: a namespace labelled
// netpol=default-deny gets a NetworkPolicy (planned first with the API
// server's own dry run), a policy deleted by hand comes back, and the
// policy is pruned when the label goes.
func (d *demo) namespacePolicies(ctx context.Context) error {
	const polNS = "payments"
	say("a Kubernetes sink (examples/namespace-policies): every namespace labelled netpol=default-deny gets a NetworkPolicy")
	_, err := d.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: polNS,
		Labels: map[string]string{"netpol": "default-deny", "netpol-tier": "api"}}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	args := []string{"-var", "kubeconfig=" + d.kubeconfig, "-var", "grace=2s", "-var", "resync=2s", "examples/namespace-policies"}
	fmt.Println("    $ pipeline plan examples/namespace-policies   (the API server's dry run, field by field; writes nothing)")
	plan := exec.CommandContext(ctx, d.bin, append([]string{"plan"}, args...)...)
	plan.Stdout, plan.Stderr = prefixWriter("    | "), prefixWriter("    | ")
	if err := plan.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			return fmt.Errorf("pipeline plan: %w", err)
		}
	}
	run := exec.CommandContext(ctx, d.bin, append([]string{"run", "--listen", "", "--log-level", "warn"}, args...)...)
	run.Stdout, run.Stderr = prefixWriter("    | "), prefixWriter("    | ")
	if err := run.Start(); err != nil {
		return err
	}
	defer func() { _ = run.Process.Signal(syscall.SIGTERM); _ = run.Wait() }()
	pols := d.cs.NetworkingV1().NetworkPolicies(polNS)
	exists := func() (bool, error) {
		_, err := pols.Get(ctx, "default-deny", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}
	if err := waitFor(ctx, 30*time.Second, "NetworkPolicy payments/default-deny created", exists); err != nil {
		return err
	}
	p, err := pols.Get(ctx, "default-deny", metav1.GetOptions{})
	if err != nil {
		return err
	}
	fmt.Printf("    created %s/%s (field manager %s, label pipeline.io/owner=%s)\n", polNS, p.Name, p.ManagedFields[0].Manager, p.Labels["pipeline.io/owner"])
	if err := pols.Delete(ctx, "default-deny", metav1.DeleteOptions{}); err != nil {
		return err
	}
	fmt.Println("    deleted it by hand (kubectl delete networkpolicy default-deny -n payments)")
	if err := waitFor(ctx, 30*time.Second, "NetworkPolicy recreated at the next resync", exists); err != nil {
		return err
	}
	fmt.Println("    it is back after the next resync (2s here)")
	if _, err := d.cs.CoreV1().Namespaces().Patch(ctx, polNS, types.MergePatchType, []byte(`{"metadata":{"labels":{"netpol":null}}}`), metav1.PatchOptions{}); err != nil {
		return err
	}
	fmt.Println("    removed the label netpol from namespace payments")
	gone := func() (bool, error) { ok, err := exists(); return !ok && err == nil, err }
	if err := waitFor(ctx, 30*time.Second, "NetworkPolicy pruned after the grace period", gone); err != nil {
		return err
	}
	fmt.Println("    the policy was pruned after the grace period (2s here); objects without the sink's label are never touched")
	return nil
}
