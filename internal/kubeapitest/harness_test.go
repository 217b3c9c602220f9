//go:build integration

package kubeapitest

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

var srv *Server

func TestMain(m *testing.M) { os.Exit(Main(m, &srv)) }

func TestHarness(t *testing.T) {
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ns := NewNamespace(t, cs)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "x"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	got, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Status.PodIP = "10.244.0.7"
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	if err := srv.StopAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	if err := srv.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("API server restart took %s", time.Since(start))
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Status.PodIP != "10.244.0.7" {
		t.Fatalf("after restart: %+v", list.Items)
	}

	nobody := srv.RESTConfig()
	nobody.BearerToken = srv.UnprivilegedToken
	_, err = kubernetes.NewForConfigOrDie(nobody).CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("unprivileged list: want 403, got %v", err)
	}
	bogus := rest.CopyConfig(srv.RESTConfig())
	bogus.BearerToken = "bogus"
	_, err = kubernetes.NewForConfigOrDie(bogus).CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if !apierrors.IsUnauthorized(err) {
		t.Fatalf("bogus token: want 401, got %v", err)
	}

	kc := t.TempDir() + "/kubeconfig"
	if err := srv.WriteKubeconfig(kc, "demo"); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kubernetes.NewForConfigOrDie(cfg).Discovery().ServerVersion(); err != nil {
		t.Fatalf("kubeconfig client: %v", err)
	}
}

func TestStopIsIdempotentAndLeavesNoProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	api, etcd := s.api.cmd.Process.Pid, s.etcd.cmd.Process.Pid
	s.Stop()
	s.Stop()
	for _, pid := range []int{api, etcd} {
		if _, err := os.Stat("/proc/" + itoa(pid)); err == nil {
			if b, _ := os.ReadFile("/proc/" + itoa(pid) + "/stat"); len(b) > 0 && !zombie(string(b)) {
				t.Fatalf("process %d still running after Stop", pid)
			}
		}
	}
}
