//go:build integration

package kubernetes

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/connrotation"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/internal/kubeapitest"
)

var srv *kubeapitest.Server

func TestMain(m *testing.M) { os.Exit(kubeapitest.Main(m, &srv)) }

// kube is a test's admin clients and namespace.
type kube struct {
	cs  kubernetes.Interface
	dyn dynamic.Interface
	ns  string
	hc  *http.Client
	d   *connrotation.Dialer
}

// newKube returns admin clients on a connection pool of their own (closed
// by close, so goleak sees no idle connection) and a fresh namespace.
func newKube(t *testing.T) *kube {
	t.Helper()
	return newKubeOn(t, srv)
}

// newKubeOn is newKube on another server.
func newKubeOn(t *testing.T, server *kubeapitest.Server) *kube {
	t.Helper()
	cfg := server.RESTConfig()
	d := connrotation.NewDialer((&net.Dialer{}).DialContext)
	cfg.Dial = d.DialContext // an uncached transport whose connections close closes
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	k := &kube{cs: cs, dyn: dyn, hc: hc, d: d}
	k.ns = kubeapitest.NewNamespace(t, cs)
	return k
}

func (k *kube) close() { k.d.CloseAll() }

func (k *kube) pod(t *testing.T, ns, name string, labels map[string]string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels,
		Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"big":"blob"}`}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	got, err := k.cs.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s/%s: %v", ns, name, err)
	}
	return got
}

func (k *kube) relabel(t *testing.T, ns, name string, labels map[string]string) {
	t.Helper()
	k.update(t, ns, name, func(p *corev1.Pod) { p.Labels = labels })
}

// update changes a pod with change, read-modify-write.
func (k *kube) update(t *testing.T, ns, name string, change func(*corev1.Pod)) {
	t.Helper()
	ctx := context.Background()
	p, err := k.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	change(p)
	if _, err := k.cs.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (k *kube) deletePod(t *testing.T, ns, name string) {
	t.Helper()
	zero := int64(0)
	if err := k.cs.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
}

// clusterBlock returns a cluster "k" block for the admin user, through a
// kubeconfig file.
func clusterBlock(t testing.TB) string {
	t.Helper()
	return clusterBlockOf(t, srv)
}

// clusterBlockOf is clusterBlock for another server.
func clusterBlockOf(t testing.TB, server *kubeapitest.Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := server.WriteKubeconfig(path, "test"); err != nil {
		t.Fatal(err)
	}
	return "cluster \"k\" {\n  kubeconfig = \"" + path + "\"\n}\n"
}

// live is a source "kubernetes" running against the test API server.
type live struct {
	src    *Source
	out    *nodetest.Output
	health *nodetest.HealthRecorder
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// start runs a source whose body is body (cluster = cluster.k is added).
func start(t *testing.T, body string) *live {
	t.Helper()
	return startProjected(t, body, nil)
}

// startProjected starts a source that decodes only proj (nil: whole objects).
func startProjected(t *testing.T, body string, proj *node.Paths) *live {
	t.Helper()
	return startOn(t, clusterBlock(t), body, proj, nil)
}

// startOn starts a source on the cluster block cluster (named k), with
// hook as its eventHook.
func startOn(t *testing.T, cluster, body string, proj *node.Paths, hook func(watch.EventType)) *live {
	t.Helper()
	s := mustBuild(t, cluster, "cluster = cluster.k\n"+body)
	s.eventHook = hook
	if proj != nil {
		s.Project(proj)
	}
	return run(t, s, nodetest.NewOutput())
}

// run runs s into out (a restart passes the previous run's out).
func run(t *testing.T, s *Source, out *nodetest.Output) *live {
	t.Helper()
	l := &live{src: s, out: out, reg: prometheus.NewRegistry(), done: make(chan error, 1)}
	env, health := nodetest.Env(t, l.reg)
	l.health = health
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	go func() { l.done <- s.Run(ctx, env, l.out) }()
	return l
}

// stop ends the run and returns Run's error.
func (l *live) stop() error {
	l.once.Do(func() {
		l.cancel()
		l.err = <-l.done
	})
	return l.err
}

func (l *live) synced(t *testing.T) {
	t.Helper()
	waitFor(t, "initial sync", func() bool {
		select {
		case err := <-l.done:
			l.done <- err
			t.Fatalf("Run ended before syncing: %v", err)
		default:
		}
		return l.out.Synced()
	})
}

func (l *live) keys() []string { k := l.out.Keys(); sort.Strings(k); return k }

// runOnce runs a source until it synced (or failed) and returns its keys.
func runOnce(t *testing.T, body string) []string {
	t.Helper()
	l := start(t, body)
	defer l.stop()
	l.synced(t)
	return l.keys()
}

// runError runs a source that must fail before syncing and returns its error.
func runError(t *testing.T, prefix, body string) (*nodetest.HealthRecorder, error) {
	t.Helper()
	s := mustBuild(t, prefix, body)
	env, health := nodetest.Env(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return health, s.Run(ctx, env, nodetest.NewOutput())
}
