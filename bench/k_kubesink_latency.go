package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

// kubeSinkLatency measures K2: a source ConfigMap's data changes, and a
// running pipeline (source "kubernetes" -> sink "kubernetes") applies a
// derived ConfigMap: from just before the source's update to the derived
// object's change seen by a watch, against a raw watch of the source seeing
// its own change (the peer), opts.Changes changes one at a time.
func kubeSinkLatency(ctx context.Context, e *Env) ([]Row, error) {
	if err := e.kube(ctx); err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(e.srv.RESTConfig())
	if err != nil {
		return nil, err
	}
	const src, dst = "k2-src", "k2-dst"
	for _, ns := range []string{src, dst} {
		if _, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx,
			&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}},
			metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}
	const objects = 10
	for i := range objects {
		cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("s-%d", i), "namespace": src, "labels": map[string]any{"k2": "src"}},
			"data":     map[string]any{"v": "0"}}}
		if _, err := dyn.Resource(configMaps).Namespace(src).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}
	cfg := fmt.Sprintf(`cluster "bench" {
  kubeconfig = %q
  qps = 100000
  burst = 100000
}
source "kubernetes" "src" {
  cluster   = cluster.bench
  resource  = "configmaps"
  namespace = %q
  selector  = "k2=src"
}
sink "kubernetes" "dst" {
  input       = source.kubernetes.src
  cluster     = cluster.bench
  namespaces  = [%q]
  owner_value = "pipeline.dst"
  object = {
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata   = { name = "d-${record.value.metadata.name}", namespace = %q }
    data       = { v = record.value.data.v }
  }
}
`, e.kubeconfig, src, dst, dst)
	path := filepath.Join(e.dir, "kubesink-latency.hcl")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	p, err := e.startProc("k2-pipeline", e.opts.Pipeline, "run", "--listen", "", "--log-level", "warn", path)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	seenSrc, stopSrc, err := watchValues(ctx, dyn, src, "k2=src")
	if err != nil {
		return nil, err
	}
	defer stopSrc()
	seenDst, stopDst, err := watchValues(ctx, dyn, dst, "pipeline.io/owner=pipeline.dst")
	if err != nil {
		return nil, err
	}
	defer stopDst()
	if err := waitValue(ctx, p, seenDst, "d-s-0", "0", time.Now(), 2*time.Minute); err != nil {
		return nil, err
	}
	var raw, pipe []time.Duration
	for run := range e.opts.Runs {
		for i := range e.opts.Changes {
			name := fmt.Sprintf("s-%d", i%objects)
			v := fmt.Sprintf("%d-%d", run, i)
			t0 := time.Now()
			patch := fmt.Sprintf(`{"data":{"v":%q}}`, v)
			if _, err := dyn.Resource(configMaps).Namespace(src).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				return nil, err
			}
			if err := waitValue(ctx, p, seenSrc, name, v, t0, 30*time.Second); err != nil {
				return nil, err
			}
			if err := waitValue(ctx, p, seenDst, "d-"+name, v, t0, 30*time.Second); err != nil {
				return nil, err
			}
			a, _ := seenSrc.Load(name)
			b, _ := seenDst.Load("d-" + name)
			raw = append(raw, a.(seen).at.Sub(t0))
			pipe = append(pipe, b.(seen).at.Sub(t0))
		}
	}
	rp, pp := percentiles(raw), percentiles(pipe)
	w50 := measured("K2a", "raw watch: source ConfigMap change seen, p50", "ms", []float64{rp[0]})
	w99 := measured("K2a'", "raw watch: source ConfigMap change seen, p99", "ms", []float64{rp[1]})
	p50 := measured("K2b", "kubernetes source -> sink: applied object seen by a watch, p50", "ms", []float64{pp[0]}).against(w50, "")
	p99 := measured("K2b'", "kubernetes source -> sink: applied object seen by a watch, p99", "ms", []float64{pp[1]}).against(w99, "")
	p50.Note = fmt.Sprintf("%d changes, one at a time", len(pipe))
	return []Row{w50, w99, p50, p99}, nil
}

// seen is the last data.v a watch saw for an object, and when.
type seen struct {
	v  string
	at time.Time
}

// watchValues watches the ConfigMaps of ns with selector and records each
// one's data.v with the time its event arrived.
func watchValues(ctx context.Context, dyn dynamic.Interface, ns, selector string) (*sync.Map, func(), error) {
	w, err := dyn.Resource(configMaps).Namespace(ns).Watch(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, nil, err
	}
	m := &sync.Map{}
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			o, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			v, _, _ := unstructured.NestedString(o.Object, "data", "v")
			m.Store(o.GetName(), seen{v: v, at: time.Now()})
		}
	}()
	return m, w.Stop, nil
}

// waitValue polls m until name holds v (seen after t0).
func waitValue(ctx context.Context, p *proc, m *sync.Map, name, v string, t0 time.Time, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		if s, ok := m.Load(name); ok && s.(seen).v == v && !s.(seen).at.Before(t0) {
			return nil
		}
		if err := p.exited(); err != nil {
			return err
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s never showed %q", name, v)
		}
		time.Sleep(200 * time.Microsecond)
	}
}
