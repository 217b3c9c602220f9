package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/cilium/ebpf"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
)

// Child runs one of the processes the table measures against the pipeline
// (the benchtable program re-runs itself with these arguments, so every
// contender is a fresh process):
//
//	floor FLAGS       raw LIST of the pods (-json for JSON, else protobuf), one BatchUpdate of their IPs, exit
//	controller FLAGS  the hand-written controller: typed pod informer -> workqueue -> one Map.Put per IP, until SIGTERM
//	churn FLAGS       P3: updates through extract -> debounce -> ebpf_map in this process, a JSON result on stdout
//	planfloor FLAGS   P6: raw LIST of the pods and one BatchLookup read of the pinned map, exit
//
// It reports whether args named a child.
func Child(args []string) (bool, error) {
	if len(args) == 0 {
		return false, nil
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	switch args[0] {
	case "floor", "controller":
		fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
		kubeconfig := fs.String("kubeconfig", "", "")
		ns := fs.String("namespace", benchNS, "")
		selector := fs.String("selector", benchLabel, "")
		pin := fs.String("pin", "", "")
		maxEntries := fs.Int("max-entries", 65536, "")
		json := fs.Bool("json", false, "")
		if err := fs.Parse(args[1:]); err != nil {
			return true, err
		}
		m, err := createPinned(*pin, *maxEntries)
		if err != nil {
			return true, err
		}
		defer m.Close()
		if args[0] == "floor" {
			return true, floorSync(ctx, *kubeconfig, *ns, *selector, m, *json)
		}
		return true, controller(ctx, *kubeconfig, *ns, *selector, m)
	case "churn":
		return true, churnChild(ctx, args[1:])
	case "planfloor":
		fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
		kubeconfig := fs.String("kubeconfig", "", "")
		ns := fs.String("namespace", benchNS, "")
		selector := fs.String("selector", benchLabel, "")
		pin := fs.String("pin", "", "")
		if err := fs.Parse(args[1:]); err != nil {
			return true, err
		}
		return true, planFloor(ctx, *kubeconfig, *ns, *selector, *pin)
	}
	return false, nil
}

// createPinned creates a hash map of IPv4 keys and u32 values and pins it.
func createPinned(pin string, maxEntries int) (*ebpf.Map, error) {
	if err := os.MkdirAll(filepath.Dir(pin), 0o755); err != nil {
		return nil, err
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: uint32(maxEntries)})
	if err != nil {
		return nil, fmt.Errorf("create map: %w", err)
	}
	if err := m.Pin(pin); err != nil {
		m.Close()
		return nil, fmt.Errorf("pin map: %w", err)
	}
	return m, nil
}

func clientset(kubeconfig string, protobuf bool) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS = -1
	if protobuf {
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	}
	return kubernetes.NewForConfig(cfg)
}

// floorSync is the fastest a hand-written program can fill the map: one
// LIST served from the watch cache (resourceVersion 0), typed decoding,
// one BatchUpdate.
func floorSync(ctx context.Context, kubeconfig, ns, selector string, m *ebpf.Map, useJSON bool) error {
	cs, err := clientset(kubeconfig, !useJSON)
	if err != nil {
		return err
	}
	l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: "0"})
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	keys := make([][4]byte, 0, len(l.Items))
	for i := range l.Items {
		if a, err := netip.ParseAddr(l.Items[i].Status.PodIP); err == nil && a.Is4() {
			keys = append(keys, a.As4())
		}
	}
	vals := make([]uint32, len(keys))
	for i := range vals {
		vals[i] = 1
	}
	if _, err := m.BatchUpdate(keys, vals, nil); err != nil {
		return fmt.Errorf("batch update: %w", err)
	}
	<-ctx.Done() // stay, so the parent can read the RSS like the others'
	return nil
}

// controller is the program the pipeline replaces, written as client-go's
// sample controller is: a typed pod informer feeds keys to a workqueue; a
// worker puts each pod's IP into the map (and removes the IP it had).
// Client-go's defaults: JSON, watch-list initial sync.
func controller(ctx context.Context, kubeconfig, ns, selector string, m *ebpf.Map) error {
	cs, err := clientset(kubeconfig, false)
	if err != nil {
		return err
	}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	inf := f.Core().V1().Pods().Informer()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	enqueue := func(obj any) {
		if k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			q.Add(k)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue,
		UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	defer func() { q.ShutDown(); f.Shutdown() }()
	go func() { <-ctx.Done(); q.ShutDown() }()
	// The worker starts at once (no WaitForCacheSync, which polls every
	// 100 ms): a handler has stored the object before it queues the key.
	have := map[string][4]byte{} // pod key -> the IP it has in the map
	for {
		k, quit := q.Get()
		if quit {
			return nil
		}
		err := reconcilePod(inf.GetIndexer(), m, have, k)
		if err != nil {
			q.AddRateLimited(k)
		} else {
			q.Forget(k)
		}
		q.Done(k)
	}
}

func reconcilePod(idx cache.Indexer, m *ebpf.Map, have map[string][4]byte, k string) error {
	obj, exists, err := idx.GetByKey(k)
	if err != nil {
		return err
	}
	var ip [4]byte
	ok := false
	if exists {
		if a, err := netip.ParseAddr(obj.(*corev1.Pod).Status.PodIP); err == nil && a.Is4() {
			ip, ok = a.As4(), true
		}
	}
	if old, had := have[k]; had && (!ok || old != ip) {
		if err := m.Delete(old); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return err
		}
		delete(have, k)
	}
	if !ok {
		return nil
	}
	if err := m.Put(ip, uint32(1)); err != nil {
		return err
	}
	have[k] = ip
	return nil
}
