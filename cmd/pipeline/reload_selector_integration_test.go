//go:build integration

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/pipeline/pipeline/internal/kubeapitest"
)

// TestReloadKubernetesSelector: editing the selector of a running
// kubernetes source on the real API server rebuilds it, and the new
// selector decides which pods it emits.
func TestReloadKubernetesSelector(t *testing.T) {
	srv := startKube(t)
	admin := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ns := kubeapitest.NewNamespace(t, admin)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := srv.WriteKubeconfig(kubeconfig, "test"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"web", "db"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if _, err := admin.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	source := fmt.Sprintf("cluster \"test\" {\n  kubeconfig = %q\n}\nsource \"kubernetes\" \"pods\" {\n  cluster   = cluster.test\n  resource  = \"pods\"\n  namespace = %q", kubeconfig, ns)
	checkSelectorReload(t, dir, source, "source.kubernetes.pods")
}
