package engine

import (
	"sync"

	"github.com/pipeline/pipeline/engine/node"
)

// origins records, for one transform during plan, the input key each
// output key comes from (node.Env.Origins). A transform that never calls
// it keeps keys unchanged.
type origins struct {
	mu sync.Mutex
	m  map[node.Key]node.Key
}

func (o *origins) record(out, in node.Key) {
	o.mu.Lock()
	o.m[out] = in
	o.mu.Unlock()
}

// traceOrigins makes every transform of the runtime report where its
// records come from; plan calls it before starting the nodes.
func (r *Runtime) traceOrigins() {
	r.origins = map[*Node]*origins{}
	for _, n := range r.g.Nodes {
		if n.Kind == node.KindTransform {
			r.origins[n] = &origins{m: map[node.Key]node.Key{}}
		}
	}
}

// originOf names the source object input key k of a sink comes from
// ("pod shop/web-1", or the source's address and key when the source has
// no node.Noun), walking the transforms up to the source (every input of
// a fan-in, the first that knows k). ok is false when a transform lost
// track of it.
func (r *Runtime) originOf(n *Node, k node.Key) (string, bool) {
	if n.Kind == node.KindSource {
		noun := n.Address
		if nn, ok := n.Source.(node.Noun); ok {
			noun = nn.Noun()
		}
		return noun + " " + k, true
	}
	if o := r.origins[n]; o != nil {
		o.mu.Lock()
		in, known := o.m[k]
		empty := len(o.m) == 0
		o.mu.Unlock()
		switch {
		case known:
			k = in
		case !empty:
			return "", false
		}
	}
	for _, in := range n.Inputs {
		if _, held := r.outs[in].Held(k); n.FanIn() && !held {
			continue
		}
		if s, ok := r.originOf(in, k); ok {
			return s, true
		}
	}
	return "", false
}
