// Command controller is the program the pipeline replaces, written as
// client-go's sample controller is: a typed pod informer feeds keys to a
// workqueue; a worker puts each pod's IP into the map (and removes the IP
// it had). It keeps client-go's defaults (JSON, watch-list initial sync)
// and runs until SIGTERM.
package main

import (
	"context"
	"errors"
	"net/netip"

	"github.com/cilium/ebpf"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/pipeline/pipeline/bench/contenders/kit"
)

func main() {
	f := kit.Parse()
	kit.Main("controller", func(ctx context.Context) error { return run(ctx, f) })
}

func run(ctx context.Context, f kit.Flags) error {
	m, err := kit.CreatePinned(f.Pin, f.MaxEntries)
	if err != nil {
		return err
	}
	defer m.Close()
	cs, err := kit.Clientset(f.Kubeconfig, true)
	if err != nil {
		return err
	}
	fac := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(f.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = f.Selector }))
	inf := fac.Core().V1().Pods().Informer()
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
	fac.Start(ctx.Done())
	defer func() { q.ShutDown(); fac.Shutdown() }()
	go func() { <-ctx.Done(); q.ShutDown() }()
	// The worker starts at once (no WaitForCacheSync, which polls every
	// 100 ms): a handler has stored the object before it queues the key.
	have := map[string][4]byte{} // pod key -> the IP it has in the map
	for {
		k, quit := q.Get()
		if quit {
			return nil
		}
		if err := reconcile(inf.GetIndexer(), m, have, k); err != nil {
			q.AddRateLimited(k)
		} else {
			q.Forget(k)
		}
		q.Done(k)
	}
}

func reconcile(idx cache.Indexer, m *ebpf.Map, have map[string][4]byte, k string) error {
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
