//go:build integration

package kubernetes

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

const benchPods = 10000

var bench struct {
	once sync.Once
	k    *kube
	err  error
}

// benchKube creates 10,000 running-looking pods (create + status update
// with a podIP, 16 clients) once per process.
func benchKube(b *testing.B) *kube {
	bench.once.Do(func() {
		cfg := srv.RESTConfig()
		cfg.QPS = -1 // no client-side rate limit
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			bench.err = err
			return
		}
		k := &kube{cs: cs}
		k.ns = "bench-" + fmt.Sprint(time.Now().UnixNano()%1e6)
		_, bench.err = cs.CoreV1().Namespaces().Create(context.Background(),
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: k.ns}}, metav1.CreateOptions{})
		if bench.err != nil {
			return
		}
		start := time.Now()
		bench.err = createPods(cs, k.ns)
		b.Logf("created %d pods in %s", benchPods, time.Since(start).Round(time.Millisecond))
		bench.k = k
	})
	if bench.err != nil {
		b.Fatal(bench.err)
	}
	return bench.k
}

func createPods(cs kubernetes.Interface, ns string) error {
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < benchPods; i += 16 {
				if err := createPod(cs, ns, i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func createPod(cs kubernetes.Interface, ns string, i int) error {
	ctx := context.Background()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%05d", i),
		Labels: map[string]string{"app": "bench", "shard": fmt.Sprint(i % 10)}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36",
			Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}}}
	got, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	got.Status.Phase = corev1.PodRunning
	got.Status.PodIP = fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
	got.Status.PodIPs = []corev1.PodIP{{IP: got.Status.PodIP}}
	_, err = cs.CoreV1().Pods(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{})
	return err
}

// rawList is the physical floor: the same paged LIST, bytes only, not
// decoded.
func rawList(b *testing.B, k *kube) time.Duration {
	cfg := srv.RESTConfig()
	cfg.QPS = -1
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	opts := metav1.ListOptions{LabelSelector: "app=bench", Limit: 500}
	for {
		raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/"+k.ns+"/pods").
			VersionedParams(&opts, metav1.ParameterCodec).SetHeader("Accept", "application/json").DoRaw(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if opts.Continue = continueToken(raw); opts.Continue == "" {
			break
		}
	}
	return time.Since(start)
}

// continueToken finds metadata.continue, which a list response has first.
func continueToken(raw []byte) string {
	const key = `"continue":"`
	i := bytes.Index(raw, []byte(key))
	if i < 0 || i > 1024 {
		return ""
	}
	rest := raw[i+len(key):]
	return string(rest[:bytes.IndexByte(rest, '"')])
}

// floorList is the floor the benchmark compares with of an initial sync: a paged LIST of the
// pods decoded to unstructured objects.
func floorList(b *testing.B, k *kube) (time.Duration, []unstructured.Unstructured) {
	cfg := srv.RESTConfig()
	cfg.QPS = -1
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	var items []unstructured.Unstructured
	opts := metav1.ListOptions{LabelSelector: "app=bench", Limit: 500}
	for {
		l, err := dyn.Resource(podsGVR).Namespace(k.ns).List(context.Background(), opts)
		if err != nil {
			b.Fatal(err)
		}
		items = append(items, l.Items...)
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			break
		}
	}
	if len(items) != benchPods {
		b.Fatalf("listed %d pods", len(items))
	}
	return time.Since(start), items
}

// syncOutput records nothing (so that only the source's own memory is
// measured) and closes synced at MarkSynced.
type syncOutput struct {
	synced  chan struct{}
	once    sync.Once
	records int
}

func (o *syncOutput) Apply([]node.Delta)       {}
func (o *syncOutput) Replace(rs []node.Record) { o.records = len(rs) }
func (o *syncOutput) MarkSynced()              { o.once.Do(func() { close(o.synced) }) }

// projectFlagship marks a variant whose source decodes only what the
// flagship extract reads (the compiler's projection).
const projectFlagship = "# project flagship\n"

// runSource starts a source and returns when it synced, with the time it
// took and a stop function.
func runSource(b *testing.B, body string, out node.Output, synced <-chan struct{}) (time.Duration, func()) {
	project := strings.Contains(body, projectFlagship)
	body = strings.Replace(body, projectFlagship, "", 1)
	s := mustBuild(b, clusterBlock(b), "cluster = cluster.k\n"+body)
	if project { // what the compiler derives for the flagship extract
		p := &node.Paths{}
		p.Add("status", "podIP")
		p.Add("metadata", "name")
		p.Add("metadata", "namespace")
		s.Project(p)
	}
	env, _ := nodetest.Env(b, nil)
	env.Logger = slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- s.Run(ctx, env, out) }()
	select {
	case <-synced:
	case err := <-done:
		cancel()
		b.Fatalf("source ended: %v", err)
	case <-time.After(2 * time.Minute):
		cancel()
		b.Fatal("source did not sync")
	}
	d := time.Since(start)
	return d, func() { cancel(); <-done }
}

func sourceBody(ns, extra string) string {
	return fmt.Sprintf("resource = \"pods\"\nnamespace = %q\nselector = \"app=bench\"\nhealth_check_interval = \"0s\"\n%s", ns, extra)
}

var variants = []struct{ name, extra string }{
	{"memory", ""},
	{"projected", projectFlagship},
	{"projected-list", projectFlagship + "initial_sync = \"list\""},
	{"projected-watch-list", projectFlagship + "initial_sync = \"watch_list\""},
	{"memory-ignore-managedFields", `ignore_fields = ["{.metadata.managedFields}"]`},
	{"metadata-only", "metadata_only = true"},
	{"metadata-only-ignore-managedFields", "metadata_only = true\nignore_fields = [\"{.metadata.managedFields}\"]"},
	{"cached", "store = \"cached\"\nignore_fields = [\"{.metadata.managedFields}\"]"},
}

// BenchmarkInitialSync10k measures the source's initial sync of 10,000
// pods, from Run to MarkSynced (connection checks and discovery included),
// against floors measured in the same iteration: a paged LIST decoded to
// unstructured by client-go's dynamic client (floor), and the same LIST's
// bytes alone (raw). ns/op is the source's time. typed-informer is a typed
// (protobuf) pod informer's sync, for reference.
func BenchmarkInitialSync10k(b *testing.B) {
	k := benchKube(b)
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			var raw, floor, src time.Duration
			for b.Loop() {
				b.StopTimer()
				raw += rawList(b, k)
				f, _ := floorList(b, k)
				floor += f
				out := &syncOutput{synced: make(chan struct{})}
				b.StartTimer()
				d, stop := runSource(b, sourceBody(k.ns, v.extra), out, out.synced)
				b.StopTimer()
				stop()
				if out.records != benchPods {
					b.Fatalf("synced %d records", out.records)
				}
				src += d
				b.StartTimer()
			}
			n := float64(b.N)
			b.ReportMetric(float64(raw.Milliseconds())/n, "raw-ms/op")
			b.ReportMetric(float64(floor.Milliseconds())/n, "floor-ms/op")
			b.ReportMetric(float64(src.Milliseconds())/n, "source-ms/op")
			b.ReportMetric(float64(src)/float64(floor), "x-floor")
			b.ReportMetric(float64(src)/float64(raw), "x-raw")
		})
	}
	b.Run("typed-informer", func(b *testing.B) {
		var d time.Duration
		for b.Loop() {
			start := time.Now()
			_, stop := typedInformer(b, k)
			d += time.Since(start)
			b.StopTimer()
			stop()
			b.StartTimer()
		}
		b.ReportMetric(float64(d.Milliseconds())/float64(b.N), "sync-ms/op")
	})
}

// BenchmarkRetainedBytes10k measures the heap each way of holding 10,000
// pods retains after a GC: the source's variants (its informer cache and
// index; records are not kept by the output), the same with a recording
// output (what the engine's collection adds), a typed pod informer, and
// the decoded unstructured list.
func BenchmarkRetainedBytes10k(b *testing.B) {
	k := benchKube(b)
	measure := func(b *testing.B, hold func() (keep any, stop func())) {
		for b.Loop() {
			before := heap()
			keep, stop := hold()
			after := heap()
			runtime.KeepAlive(keep)
			stop()
			b.ReportMetric(float64(after-before)/benchPods, "B/pod")
		}
	}
	b.Run("unstructured-list", func(b *testing.B) {
		measure(b, func() (any, func()) { _, items := floorList(b, k); return items, func() {} })
	})
	b.Run("typed-informer", func(b *testing.B) {
		measure(b, func() (any, func()) { return typedInformer(b, k) })
	})
	for _, v := range variants {
		b.Run("source-"+v.name, func(b *testing.B) {
			measure(b, func() (any, func()) {
				out := &syncOutput{synced: make(chan struct{})}
				_, stop := runSource(b, sourceBody(k.ns, v.extra), out, out.synced)
				return out, stop
			})
		})
	}
	for _, v := range []struct{ name, extra string }{{"memory-ignore-managedFields", variants[2].extra}, {"projected", projectFlagship}} {
		b.Run("source-"+v.name+"+output", func(b *testing.B) {
			measure(b, func() (any, func()) {
				out := nodetest.NewOutput()
				synced := make(chan struct{})
				go func() {
					for !out.Synced() {
						<-out.Changed()
					}
					close(synced)
				}()
				_, stop := runSource(b, sourceBody(k.ns, v.extra), out, synced)
				return out, stop
			})
		})
	}
}

func typedInformer(b *testing.B, k *kube) (any, func()) {
	cs, err := kubernetes.NewForConfig(srv.RESTConfig())
	if err != nil {
		b.Fatal(err)
	}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(k.ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app=bench" }))
	inf := f.Core().V1().Pods().Informer()
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx.Done())
	for !inf.HasSynced() {
		time.Sleep(time.Millisecond)
	}
	if n := len(inf.GetStore().ListKeys()); n != benchPods {
		b.Fatalf("typed informer holds %d pods", n)
	}
	return inf, func() { cancel(); f.Shutdown() }
}

func heap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
