package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/pipeline/pipeline/internal/kubeapitest"
)

// Env is what the scenarios share: a real kube-apiserver + etcd and the
// matching pods, created on first use and reused by every scenario, and
// a scratch directory.
type Env struct {
	opts Options
	logf func(string, ...any)

	dir        string
	srv        *kubeapitest.Server
	cs         kubernetes.Interface
	kubeconfig string
	ns         string
	configs    int  // config files written
	profiles   int  // profile pairs written (-profile)
	bigSeeded  bool // the pods of P11 are created (p11_big_sync.go)
}

// namespace and label of the pods the scenarios watch.
const (
	benchNS    = "bench"
	benchLabel = "app=bench"
)

// kube starts the API server and creates opts.Pods pods with a podIP.
func (e *Env) kube(ctx context.Context) error {
	if e.srv != nil {
		return nil
	}
	if err := e.scratch(); err != nil {
		return err
	}
	start := time.Now()
	srv, err := kubeapitest.Start(ctx, kubeapitest.Options{Dir: filepath.Join(e.dir, "apiserver")})
	if err != nil {
		return fmt.Errorf("start kube-apiserver: %w", err)
	}
	e.srv = srv
	e.logf("kube-apiserver %s ready in %s", kubeapitest.Version, time.Since(start).Round(time.Millisecond))
	e.kubeconfig = filepath.Join(e.dir, "kubeconfig")
	if err := srv.WriteKubeconfig(e.kubeconfig, "bench"); err != nil {
		return err
	}
	cfg := srv.RESTConfig()
	cfg.QPS = -1
	if e.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	e.ns = benchNS
	if _, err := e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace: %w", err)
	}
	start = time.Now()
	if err := createPods(ctx, e.cs, e.ns, e.opts.Pods); err != nil {
		return err
	}
	e.logf("created %d pods with a podIP in %s", e.opts.Pods, time.Since(start).Round(time.Millisecond))
	return nil
}

func (e *Env) scratch() error {
	if e.dir != "" {
		return nil
	}
	d, err := os.MkdirTemp("", "pipeline-bench-")
	e.dir = d
	return err
}

// Close stops the API server and removes the scratch directory.
func (e *Env) Close() {
	if e.srv != nil {
		e.srv.Stop()
	}
	if e.dir != "" {
		_ = os.RemoveAll(e.dir)
	}
}

// podIP is the address of pod i: unique for i < 2^24, never .0.
func podIP(i int) [4]byte { return [4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)} }

func ipString(ip [4]byte) string { return fmt.Sprintf("%d.%d.%d.%d", ip[0], ip[1], ip[2], ip[3]) }

// createPods creates n running-looking pods (create, then a status update
// with phase Running and a podIP, as a kubelet would) with 32 clients.
func createPods(ctx context.Context, cs kubernetes.Interface, ns string, n int) error {
	const workers = 32
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if err := createPod(ctx, cs, ns, i); err != nil {
					errs <- fmt.Errorf("create pod %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func createPod(ctx context.Context, cs kubernetes.Interface, ns string, i int) error {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%05d", i),
		Labels: map[string]string{"app": "bench", "shard": fmt.Sprint(i % 10)}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36",
			Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}}}
	got, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	setIP(got, ipString(podIP(i)))
	_, err = cs.CoreV1().Pods(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{})
	return err
}

func setIP(p *corev1.Pod, ip string) {
	p.Status.Phase = corev1.PodRunning
	p.Status.PodIP = ip
	p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
}

// contender returns the path of a contender program (bench/contenders).
func (e *Env) contender(name string) string {
	return filepath.Join(e.opts.Contenders, name)
}
