package console

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestGatherGauges: a frame takes each node's queue depth and the deletes
// its deletion brake holds from the engine's gauges.
func TestGatherGauges(t *testing.T) {
	reg := prometheus.NewRegistry()
	queue := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pipeline_node_queue_depth"}, []string{"node"})
	held := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pipeline_sink_deletes_held"}, []string{"node"})
	reg.MustRegister(queue, held)
	queue.WithLabelValues("sink.mem.m").Set(3)
	held.WithLabelValues("sink.mem.m").Set(300)
	held.WithLabelValues("sink.mem.n").Set(0)
	_, gs, err := gatherCounts(reg)
	if err != nil {
		t.Fatal(err)
	}
	if g := gs["sink.mem.m"]; g.queue != 3 || g.braked != 300 {
		t.Errorf("sink.mem.m: %+v, want queue 3, braked 300", g)
	}
	if g := gs["sink.mem.n"]; g.braked != 0 {
		t.Errorf("sink.mem.n: %+v, want braked 0", g)
	}
}
