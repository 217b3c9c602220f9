package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/internal/ctyconv"
)

const graph = `
source "feed" "pods" {}
transform "extract" "ips" {
  input    = source.feed.pods
  where    = object.status.phase == "Running"
  for_each = object.status.podIPs
  key      = each.value.ip
  value    = { pod = object.metadata.name, gen = object.metadata.generation }
}
transform "debounce" "batch" {
  input    = transform.extract.ips
  interval = "1ms"
  max_wait = "10ms"
}
transform "grace_period" "drain" {
  input = transform.debounce.batch
  delay = "30s"
}
sink "mem" "discard" {
  input = transform.grace_period.drain
}
`

func pod(i, gen int) node.Record {
	ip := fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
	v, _ := ctyconv.ToCty(map[string]any{
		"metadata": map[string]any{"name": fmt.Sprint("pod-", i), "namespace": "shop", "generation": gen,
			"labels": map[string]any{"app": "backend", "tier": "web"}},
		"status": map[string]any{"phase": "Running", "podIP": ip, "podIPs": []any{map[string]any{"ip": ip}}},
	})
	return node.Record{Key: fmt.Sprint("shop/pod-", i), Value: v}
}

// BenchmarkChain pushes object updates (5,000 pods, each update a new
// generation) through extract -> debounce -> grace_period -> a sink that
// discards, with the real engine collections in between, and reports
// updates/s end to end (the goal: far above 5,000/s).
func BenchmarkChain(b *testing.B) {
	f := &churnFeed{ops: make(chan func(node.Output), 64)}
	sink := nodetest.NewMemSink()
	sink.AppendOnly = true
	rt, err := feedRuntime(f, graph, node.Spec{Kind: node.KindSink, Type: "mem", Summary: "bench",
		NewSink: func(node.Build) (node.Sink, hcl.Diagnostics) { return sink, nil }})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = rt.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	const pods, batch = 5000, 500
	// The updates are built before the clock starts: the benchmark measures
	// the pipeline, not the making of cty values.
	var batches [][]node.Delta
	for sent, gen := 0, 1; sent < b.N; gen++ {
		n := min(batch, b.N-sent)
		deltas := make([]node.Delta, n)
		for j := range n {
			p := pod((sent+j)%pods, gen)
			deltas[j] = node.Upsert(p.Key, p.Value, time.Time{})
		}
		sent += n
		batches = append(batches, deltas)
	}
	lastBatch := batches[len(batches)-1]
	last := lastBatch[len(lastBatch)-1].Value
	b.ReportAllocs()
	b.ResetTimer()
	for _, deltas := range batches {
		f.ops <- func(o node.Output) { o.Apply(deltas) }
	}
	wantGen := last.GetAttr("metadata").GetAttr("generation")
	lastIP := last.GetAttr("status").GetAttr("podIP").AsString()
	for !sink.Has(lastIP, func(v cty.Value) bool { return v.GetAttr("gen").RawEquals(wantGen) }) {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "updates/s")
}
