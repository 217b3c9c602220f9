//go:build integration

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/pipeline/pipeline/internal/kubeapitest"
	"github.com/pipeline/pipeline/internal/xdptest"
)

// TestAllowListEnforcedInKernel is the flagship job end to end: a pod on the
// real API server whose status.podIP is namespace A's address makes ping
// A->B pass through an XDP allow-list; deleting the pod makes it fail once
// the grace period has passed.
func TestAllowListEnforcedInKernel(t *testing.T) {
	requireRoot(t)
	xdptest.Require(t)
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ns := kubeapitest.NewNamespace(t, cs)
	pin := pinDir(t) + "/allowed"
	r := start(t, fmt.Sprintf(`
cluster "test" {
  kubeconfig = %s
}
source "kubernetes" "pods" {
  cluster   = cluster.test
  resource  = "pods"
  namespace = %s
  selector  = "app=client"
}
transform "extract" "ips" {
  input = source.kubernetes.pods
  where = try(object.status.podIP, "") != ""
  key   = object.status.podIP
}
transform "debounce" "batch" {
  input    = transform.extract.ips
  interval = "50ms"
}
transform "grace_period" "drain" {
  input = transform.debounce.batch
  delay = "1s"
}
sink "ebpf_map" "allowed" {
  input = transform.grace_period.drain
  pin   = %s
  key {
    type = "ipv4"
  }
  value {
    type = "u8"
    from = 1
  }
}
`, hclString(kubeconfig(t)), hclString(ns), hclString(pin)))
	r.waitReady(t)

	pair, err := xdptest.NewPair(202)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := pair.Close(); err != nil {
			t.Error(err)
		}
	}()
	m, err := ebpf.LoadPinnedMap(pin, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	prog, err := xdptest.AllowList(m, false)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	if err := pair.AttachToB(prog); err != nil {
		t.Fatal(err)
	}
	if pair.Ping() {
		t.Fatal("ping A->B passes before any pod exists")
	}

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "client", Labels: map[string]string{"app": "client"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/c"}}}}
	created, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.PodIP = pair.AddrA.String()
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "ping A->B to pass once the pod has A's IP", pair.Ping)

	if err := cs.CoreV1().Pods(ns).Delete(ctx, "client", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	if !pair.Ping() {
		t.Fatal("ping A->B failed right after the delete: the grace period must keep the IP allowed")
	}
	eventually(t, 10*time.Second, "ping A->B to fail after the grace period", func() bool { return !pair.Ping() })
	if since := time.Since(deleted); since < time.Second {
		t.Fatalf("the IP was removed %s after the delete, before the 1s grace period", since)
	}
}
