package console

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pipeline/pipeline/engine/node"
)

func TestLayout(t *testing.T) {
	// Two sources fan in to a transform; a second chain is shorter; every
	// sink lands in the last column.
	nodes := []layoutNode{
		{Address: "source.static.cidrs", Kind: node.KindSource},
		{Address: "source.kubernetes.pods", Kind: node.KindSource},
		{Address: "transform.extract.ips", Kind: node.KindTransform, Inputs: []string{"source.kubernetes.pods"}},
		{Address: "transform.grace_period.drain", Kind: node.KindTransform, Inputs: []string{"transform.extract.ips", "source.static.cidrs"}},
		{Address: "sink.log.raw", Kind: node.KindSink, Inputs: []string{"source.kubernetes.pods"}},
		{Address: "sink.ebpf_map.allowed", Kind: node.KindSink, Inputs: []string{"transform.grace_period.drain"}},
	}
	boxes, w, h := layout(nodes)
	layers := map[string]int{}
	for a, b := range boxes {
		layers[a] = b.Layer
	}
	want := map[string]int{"source.static.cidrs": 0, "source.kubernetes.pods": 0, "transform.extract.ips": 1,
		"transform.grace_period.drain": 2, "sink.log.raw": 3, "sink.ebpf_map.allowed": 3}
	if d := cmp.Diff(want, layers); d != "" {
		t.Errorf("columns (-want +got):\n%s", d)
	}
	for a, b := range boxes {
		if b.X < 0 || b.Y < 0 || b.X+b.W > w || b.Y+b.H > h {
			t.Errorf("%s at %+v outside the drawing %dx%d", a, b, w, h)
		}
		for a2, b2 := range boxes {
			if a < a2 && b.Layer == b2.Layer && b.Y < b2.Y+b2.H && b2.Y < b.Y+b.H {
				t.Errorf("%s and %s overlap: %+v %+v", a, a2, b, b2)
			}
		}
	}
	// The sink of the pods sits level with the pods, not crossing the other chain.
	if boxes["sink.log.raw"].Y > boxes["sink.ebpf_map.allowed"].Y != (boxes["source.kubernetes.pods"].Y > boxes["source.static.cidrs"].Y) {
		t.Errorf("sinks ordered against their sources: %+v", boxes)
	}
}

func TestLayoutOneNode(t *testing.T) {
	boxes, w, h := layout([]layoutNode{{Address: "source.static.s", Kind: node.KindSource}})
	if b := boxes["source.static.s"]; b.W != nodeW || w < nodeW || h < nodeH {
		t.Errorf("one node: %+v in %dx%d", b, w, h)
	}
}

func TestRing(t *testing.T) {
	var r ring
	for i := range historyLen + 5 {
		r.add(point{T: int64(i), Records: i})
	}
	s := r.series()
	if len(s.T) != historyLen || s.T[0] != 5 || s.T[historyLen-1] != historyLen+4 {
		t.Errorf("series holds %d points from %d to %d, want the last %d", len(s.T), s.T[0], s.T[len(s.T)-1], historyLen)
	}
}
