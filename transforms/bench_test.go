package transforms_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/ctyconv"
	"github.com/pipeline/pipeline/transforms/debounce"
	"github.com/pipeline/pipeline/transforms/extract"
	"github.com/pipeline/pipeline/transforms/graceperiod"
)

// discard is a terminal Output that counts deltas and signals when a
// record key it waits for arrives.
type discard struct {
	deltas atomic.Int64
	want   atomic.Pointer[string]
	seen   chan struct{}
}

func (d *discard) Apply(ds []node.Delta) {
	d.deltas.Add(int64(len(ds)))
	if w := d.want.Load(); w != nil {
		for _, x := range ds {
			if x.Key == *w && !x.Delete {
				d.want.Store(nil)
				d.seen <- struct{}{}
				return
			}
		}
	}
}

func (d *discard) Replace(rs []node.Record) { d.deltas.Add(int64(len(rs))) }
func (d *discard) MarkSynced()              {}

var _ node.Output = (*discard)(nil)

// benchPod is a pod object as a kubernetes source emits it (after
// ignore_fields), with the given IP.
func benchPod(b *testing.B, i int, ip string) cty.Value {
	name := fmt.Sprint("backend-", i)
	v, err := ctyconv.ToCty(map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": "shop", "uid": fmt.Sprint("uid-", i),
			"labels": map[string]any{"app": "backend", "pod-template-hash": "5d8f7c"}},
		"spec": map[string]any{"nodeName": fmt.Sprint("node-", i%50), "containers": []any{
			map[string]any{"name": "app", "image": "shop/backend:1.2.3", "ports": []any{map[string]any{"containerPort": 8080}}}}},
		"status": map[string]any{"phase": "Running", "podIP": ip, "podIPs": []any{map[string]any{"ip": ip}}},
	})
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// BenchmarkChain measures object updates per second through
// extract -> debounce -> grace_period -> discard, the flagship chain. One
// op is one object update (a pod whose IP changes, which is a delete and an
// upsert downstream of extract); updates arrive in batches of 100, as from
// the engine's queues. ns/op is ns per object update and allocs/op is
// allocations per object update, across every goroutine of the chain.
func BenchmarkChain(b *testing.B) {
	const pods, batch = 10_000, 100
	variants := [2][]cty.Value{make([]cty.Value, pods), make([]cty.Value, pods)}
	initial := make([]node.Record, pods)
	for i := range pods {
		variants[0][i] = benchPod(b, i, fmt.Sprintf("10.1.%d.%d", i/250, i%250))
		variants[1][i] = benchPod(b, i, fmt.Sprintf("10.2.%d.%d", i/250, i%250))
		initial[i] = node.Record{Key: fmt.Sprint("shop/backend-", i), Value: variants[0][i]}
	}
	out := &discard{seen: make(chan struct{})}
	src := chain(b, out,
		stage{extract.Spec(), `
where    = object.status.phase == "Running"
for_each = object.status.podIPs
key      = each.value.ip
value    = { pod = object.metadata.name, namespace = object.metadata.namespace, node = object.spec.nodeName }`},
		stage{debounce.Spec(), "interval = \"5ms\"\nmax_wait = \"50ms\""},
		stage{graceperiod.Spec(), `delay = "30s"`},
	)
	src.Replace(initial)
	src.MarkSynced()
	waitFor(b, out, src, "sentinel-0")

	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for n := 0; n < b.N; {
		ds := make([]node.Delta, 0, batch)
		for ; len(ds) < batch && n < b.N; n++ {
			i := n % pods
			round := n / pods
			ds = append(ds, node.Upsert(initial[i].Key, variants[(round+1)%2][i], time.Now()))
		}
		src.Apply(ds)
	}
	waitFor(b, out, src, "sentinel-1")
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "updates/s")
	b.ReportMetric(float64(out.deltas.Load())/float64(b.N), "out-deltas/update")
}

// waitFor sends a sentinel object and waits until its record comes out.
func waitFor(b *testing.B, out *discard, src *pipe, ip string) {
	b.Helper()
	out.want.Store(&ip)
	src.Apply([]node.Delta{node.Upsert("sentinel/"+ip, benchPod(b, -1, ip), time.Now())})
	select {
	case <-out.seen:
	case <-time.After(time.Minute):
		b.Fatal("sentinel never arrived")
	}
}
