// Command ssafloor is the floor of bench row K1: the hand-written client-go
// loop a controller would run to server-side apply n ConfigMaps, with a
// fixed number of workers. It is its own process so it pays its own
// start-up, as `pipeline run` does.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig")
	ns := flag.String("namespace", "", "namespace of the ConfigMaps")
	n := flag.Int("n", 1000, "ConfigMaps to apply")
	workers := flag.Int("concurrency", 16, "applies in flight")
	label := flag.String("label", "pipeline.io/owner=floor", "label KEY=VALUE every object carries")
	flag.Parse()
	if err := run(*kubeconfig, *ns, *label, *n, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "ssafloor:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, ns, label string, n, workers int) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 100000, 100000 // as the pipeline's cluster block in the bench
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	key, value, _ := cut(label)
	cms := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				name := fmt.Sprintf("cm-%05d", i)
				obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{key: value}},
					"data":     map[string]any{"value": fmt.Sprintf("value-%d", i)}}}
				if _, err := cms.Apply(context.Background(), name, obj, metav1.ApplyOptions{FieldManager: "floor"}); err != nil {
					errs <- fmt.Errorf("apply %s: %w", name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func cut(s string) (string, string, bool) {
	for i := range s {
		if s[i] == '=' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
