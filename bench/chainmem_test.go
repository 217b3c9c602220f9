package bench

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
)

// The README's flagship chain after its source, and the same source
// straight into the sink: the difference is what the transforms keep.
const (
	memChain = `
source "feed" "pods" {}
transform "extract" "ips" {
  input = source.feed.pods
  where = try(object.status.podIP, "") != ""
  key   = object.status.podIP
  value = { pod = object.metadata.name, namespace = object.metadata.namespace }
}
transform "debounce" "batch" {
  input    = transform.extract.ips
  interval = "1ms"
}
transform "grace_period" "drain" {
  input = transform.debounce.batch
  delay = "30s"
}
sink "count" "out" {
  input = transform.grace_period.drain
}
`
	memBase = `
source "feed" "pods" {}
sink "count" "out" {
  input = source.feed.pods
}
`
)

// countSink's target keeps nothing per entry (its entries' values are one
// shared constant) and counts the keys it holds.
type countSink struct{ held atomic.Int64 }

func (s *countSink) Open(context.Context, node.Env, node.Mode) (node.Target, error) { return s, nil }
func (s *countSink) Prepare(r node.Record) (node.Entry, error) {
	return node.Entry{Key: r.Key, Value: cty.True}, nil
}
func (s *countSink) Actual(context.Context) ([]node.Entry, error) { return nil, nil }
func (s *countSink) Update(_ context.Context, b []node.Entry)     { s.held.Add(int64(len(b))) }
func (s *countSink) Delete(_ context.Context, b []node.Entry)     { s.held.Add(-int64(len(b))) }
func (s *countSink) Close() error                                 { return nil }

// liveHeap is the heap's live bytes after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// heldBytes runs graph over pods records and returns the live heap the
// records added once the sink holds them all, per record, apart from the
// source's own packed values (made before the first reading, as the
// kubernetes source packs them: podPacked).
func heldBytes(b *testing.B, graph string, pods int) float64 {
	f := &churnFeed{ops: make(chan func(node.Output), 1)}
	sink := &countSink{}
	rt, err := feedRuntime(f, graph, node.Spec{Kind: node.KindSink, Type: "count", Summary: "bench",
		NewSink: func(node.Build) (node.Sink, hcl.Diagnostics) { return sink, nil }})
	if err != nil {
		b.Fatal(err)
	}
	records := make([]node.Record, pods)
	for i := range records {
		name := fmt.Sprintf("backend-%05d", i)
		records[i] = node.Record{Key: "shop/" + name,
			Value: node.PackedVal(&podPacked{name: name, namespace: "shop", ip: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)})}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = rt.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	time.Sleep(100 * time.Millisecond) // the nodes start
	before := liveHeap()
	f.ops <- func(o node.Output) { o.Replace(records); o.MarkSynced() }
	for deadline := time.Now().Add(time.Minute); sink.held.Load() < int64(pods); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("the sink holds %d of %d records", sink.held.Load(), pods)
		}
	}
	time.Sleep(500 * time.Millisecond) // every stage idle: debounce flushed, the sink loop settled
	after := liveHeap()
	runtime.KeepAlive(records)
	return (float64(after) - float64(before)) / float64(pods)
}

// BenchmarkChainMemory measures the live heap per record that the README's
// flagship chain keeps after its source (extract -> debounce ->
// grace_period, a sink that keeps nothing per entry): the chain's bytes
// per record less those of the same source straight into the sink. The
// source's records are packed as the kubernetes source packs them. Run it
// with -benchtime 1x: one op is a whole load of 10,000 records.
func BenchmarkChainMemory(b *testing.B) {
	const pods = 10_000
	var chain, base float64
	for b.Loop() {
		chain += heldBytes(b, memChain, pods)
		base += heldBytes(b, memBase, pods)
	}
	n := float64(b.N)
	b.ReportMetric(chain/n, "chain-B/record")
	b.ReportMetric(base/n, "base-B/record")
	b.ReportMetric((chain-base)/n, "transforms-B/record")
}
