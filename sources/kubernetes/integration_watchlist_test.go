//go:build integration

package kubernetes

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/kubeapitest"
)

const watchList = "initial_sync = \"watch_list\"\n"

// initialCalls returns how many LISTs and watch-list streams the running
// source asked for.
func (l *live) initialCalls() (lists, streams int32) {
	l.src.mu.Lock()
	defer l.src.mu.Unlock()
	return l.src.current.lists.Load(), l.src.current.streams.Load()
}

// createIPPods creates n pods named p0.. labelled app=wl, each with a
// podIP 10.9.x.y.
func createIPPods(t *testing.T, cs kubernetes.Interface, ns string, n int) {
	t.Helper()
	for i := range n {
		createIPPod(t, cs, ns, fmt.Sprint("p", i), podIPOf(i))
	}
}

func podIPOf(i int) string { return fmt.Sprintf("10.9.%d.%d", i/250, i%250+1) }

func createIPPod(t *testing.T, cs kubernetes.Interface, ns, name, ip string) {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "wl"}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	got, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	setPodIP(t, cs, got, ip)
}

func setPodIP(t *testing.T, cs kubernetes.Interface, p *corev1.Pod, ip string) {
	t.Helper()
	p.Status.PodIP, p.Status.Phase = ip, corev1.PodRunning
	if _, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("status of pod %s: %v", p.Name, err)
	}
}

// podIPs returns the records' podIPs by key.
func podIPs(out map[string]cty.Value) map[string]string {
	m := map[string]string{}
	for k, v := range out {
		if ip := attr(v, "status", "podIP"); ip != cty.NilVal && ip.Type() == cty.String {
			m[k] = ip.AsString()
		}
	}
	return m
}

func wantIPs(ns string, n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("%s/p%d", ns, i)] = podIPOf(i)
	}
	return m
}

// TestInitialSyncMethods reads the initial state of the real API server
// with each initial_sync, through each informer the source builds, and
// checks that the stream or the LIST asked for is what served it.
func TestInitialSyncMethods(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	k := newKube(t)
	defer k.close()
	const n = 30
	createIPPods(t, k.cs, k.ns, n)
	podIP := paths(".status.podIP")
	for _, tt := range []struct {
		name     string
		extra    string
		proj     *node.Paths
		metadata bool
		stream   bool
	}{
		{name: "watch_list, projected", extra: watchList, proj: podIP, stream: true},
		{name: "watch_list, whole objects", extra: watchList, stream: true},
		{name: "watch_list, metadata_only", extra: watchList + "metadata_only = true\n", metadata: true, stream: true},
		{name: "list, projected", extra: "initial_sync = \"list\"\n", proj: podIP},
		{name: "default (list), whole objects"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := startProjected(t, fmt.Sprintf("resource = \"pods\"\nnamespace = %q\nselector = \"app=wl\"\n%s", k.ns, tt.extra), tt.proj)
			defer l.stop()
			l.synced(t)
			if tt.metadata {
				if got := len(l.out.State()); got != n {
					t.Errorf("%d records, want %d", got, n)
				}
			} else if diff := cmp.Diff(wantIPs(k.ns, n), podIPs(l.out.State())); diff != "" {
				t.Errorf("initial podIPs (-want +got)\n%s", diff)
			}
			lists, streams := l.initialCalls()
			if tt.stream && (lists != 0 || streams != 1) {
				t.Errorf("watch_list: %d LISTs and %d streams, want 0 and 1", lists, streams)
			}
			if !tt.stream && (lists != 1 || streams != 0) {
				t.Errorf("list: %d LISTs and %d streams, want 1 and 0", lists, streams)
			}
			// The stream goes on as the watch.
			createIPPod(t, k.cs, k.ns, "late-"+fmt.Sprint(len(tt.name)), "10.9.99.1")
			waitFor(t, "the pod created after the sync", hasKey(l.out, k.ns+"/late-"+fmt.Sprint(len(tt.name))))
			k.deletePod(t, k.ns, "late-"+fmt.Sprint(len(tt.name)))
			if err := l.stop(); err != nil {
				t.Errorf("Run = %v", err)
			}
		})
	}
}

// TestInitialSyncEventsDuringStream changes pods while the source is in
// the middle of reading a watch-list's initial events (the stream held
// at its first event), and checks that the synced state, then the state
// after the changes arrive, are right.
func TestInitialSyncEventsDuringStream(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	k := newKube(t)
	defer k.close()
	const n = 50
	createIPPods(t, k.cs, k.ns, n)
	for _, tt := range []struct {
		name string
		proj *node.Paths
	}{{"projected", paths(".status.podIP", ".metadata.labels.app")}, {"whole objects", nil}} {
		t.Run(tt.name, func(t *testing.T) {
			ns := k.ns
			fresh := "new-" + fmt.Sprint(len(tt.name))
			var once sync.Once
			changed := make(chan struct{})
			hook := func(typ watch.EventType) {
				if typ != watch.Added {
					return
				}
				once.Do(func() {
					defer close(changed)
					ctx := context.Background()
					createIPPod(t, k.cs, ns, fresh, "10.9.98.1")
					p1, err := k.cs.CoreV1().Pods(ns).Get(ctx, "p1", metav1.GetOptions{})
					if err != nil {
						t.Error(err)
						return
					}
					setPodIP(t, k.cs, p1, "10.9.98.2")
					k.deletePod(t, ns, "p2")
					k.relabel(t, ns, "p3", map[string]string{"app": "other"})
				})
			}
			l := startOn(t, clusterBlock(t), fmt.Sprintf("resource = \"pods\"\nnamespace = %q\nselector = \"app=wl\"\n%s", ns, watchList), tt.proj, hook)
			defer l.stop()
			l.synced(t)
			<-changed
			want := wantIPs(ns, n)
			want[ns+"/"+fresh] = "10.9.98.1"
			want[ns+"/p1"] = "10.9.98.2"
			delete(want, ns+"/p2")
			delete(want, ns+"/p3")
			var got map[string]string
			deadline := time.Now().Add(10 * time.Second)
			for got = podIPs(l.out.State()); !cmp.Equal(want, got) && time.Now().Before(deadline); got = podIPs(l.out.State()) {
				time.Sleep(5 * time.Millisecond)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("podIPs after the changes (-want +got)\n%s", diff)
			}
			if lists, streams := l.initialCalls(); lists != 0 || streams != 1 {
				t.Errorf("%d LISTs and %d streams, want 0 and 1", lists, streams)
			}
			if err := l.stop(); err != nil {
				t.Errorf("Run = %v", err)
			}
			// Put the pods back for the next case.
			k.deletePod(t, ns, fresh)
			k.relabel(t, ns, "p3", map[string]string{"app": "wl"})
			createIPPod(t, k.cs, ns, "p2", podIPOf(2))
			p1, err := k.cs.CoreV1().Pods(ns).Get(context.Background(), "p1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			setPodIP(t, k.cs, p1, podIPOf(1))
		})
	}
}

// TestInitialSyncFallback runs the source against an API server with the
// WatchList feature off: the watch-list stream is refused, and the
// source reads the initial state with one LIST instead.
func TestInitialSyncFallback(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	old, err := kubeapitest.Start(ctx, kubeapitest.Options{Dir: filepath.Join(t.TempDir(), "apiserver"),
		APIServerArgs: []string{"--feature-gates=WatchList=false"}})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Stop()
	defer goleak.VerifyNone(t, leakOptions()...)
	k := newKubeOn(t, old)
	defer k.close()
	cs, ns := k.cs, k.ns
	const n = 20
	createIPPods(t, cs, ns, n)
	for _, tt := range []struct {
		name string
		proj *node.Paths
	}{{"projected", paths(".status.podIP")}, {"whole objects", nil}} {
		t.Run(tt.name, func(t *testing.T) {
			l := startOn(t, clusterBlockOf(t, old), fmt.Sprintf("resource = \"pods\"\nnamespace = %q\nselector = \"app=wl\"\n%s", ns, watchList), tt.proj, nil)
			defer l.stop()
			l.synced(t)
			if diff := cmp.Diff(wantIPs(ns, n), podIPs(l.out.State())); diff != "" {
				t.Errorf("initial podIPs (-want +got)\n%s", diff)
			}
			if lists, streams := l.initialCalls(); lists != 1 || streams != 1 {
				t.Errorf("%d LISTs and %d streams, want 1 refused stream and 1 LIST", lists, streams)
			}
			name := "late-" + fmt.Sprint(len(tt.name))
			createIPPod(t, cs, ns, name, "10.9.99.1")
			waitFor(t, "the pod created after the sync", hasKey(l.out, ns+"/"+name))
			k.deletePod(t, ns, name)
			if err := l.stop(); err != nil {
				t.Errorf("Run = %v", err)
			}
		})
	}
}
