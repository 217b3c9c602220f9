package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/sinkloop"
	"github.com/pipeline/pipeline/schema"
)

// Explanation answers "why is this key in my targets, or why not?" for a
// running instance (`pipeline explain KEY`). What a target holds is read
// from it for the answer (sinkloop.Entry); views mask sensitive values.
type Explanation struct {
	Key string
	// Entries are the sink entries that hold or want Key (as an input key
	// or as the target's key), sorted by sink.
	Entries []SinkEntry
	// Seen lists the nodes whose output holds Key when no sink entry does:
	// where the record stops.
	Seen []Stage
	// Gates are, when no sink entry holds Key, the selectors and
	// conditions on the way to each sink that decide which records reach
	// it: what would have to change for Key to appear.
	Gates []Gate
}

// SinkEntry is one sink's view of a key: its loop's (sinkloop.Entry),
// with the record's provenance.
type SinkEntry struct {
	Sink string
	sinkloop.Entry
	// Origin is the record's provenance and Path the stages it went
	// through, from its source to the sink.
	Origin *node.Origin
	Path   []Stage
	// Input is, for a fan-in (inputs = [...]), the input whose record the
	// sink has (the one Origin and Path come through); OtherInputs are the
	// other inputs that hold the key too, in the order of inputs.
	Input       string   `json:",omitempty"`
	OtherInputs []string `json:",omitempty"`
}

// Stage is a record as one node's output holds it.
type Stage struct {
	Node    string
	Key     node.Key
	Present bool
	Value   cty.Value
	// PendingDelete is when a held-back deletion of the key passes
	// downstream (grace_period); zero when none waits.
	PendingDelete time.Time
}

// Gate is one attribute that selects what reaches a sink.
type Gate struct {
	Node string
	Attr string
	Pos  string // file:line:col
	Text string // the attribute's expression as written
}

// explainWait bounds how long explain waits for a busy sink loop.
const explainWait = 2 * time.Second

// Explain explains key. It only reads: each sink loop answers between two
// of its rounds, reading its target at the key, and collections are read
// under their locks.
func (r *Runtime) Explain(ctx context.Context, key node.Key) Explanation {
	ex := Explanation{Key: key}
	// A reload swaps the graph and its loops and collections under r.mu:
	// take this graph's, then ask each loop without holding the lock.
	r.mu.RLock()
	g := r.g
	nodes := g.Nodes
	recs := maps.Clone(r.nodes)
	r.mu.RUnlock()
	for _, n := range nodes {
		rn := recs[n]
		if n.Kind != node.KindSink || rn == nil {
			continue
		}
		r.mu.RLock()
		in, f := r.inputOf(n), rn.fanIn
		r.mu.RUnlock()
		e, ok := sinkEntry(ctx, n, rn.sink, in, key)
		if !ok {
			continue
		}
		if rec, ok := in.lookup(e.InputKey); ok {
			e.Origin = rec.Origin
			if f != nil {
				e.Input, e.OtherInputs = fanInHolders(n, e.InputKey, e.Origin, recs)
			}
			if e.Origin != nil {
				e.Path = r.stages(n, e.Origin, e.InputKey, e.Input, recs)
			}
		}
		if f != nil {
			if why, ok := f.conflict(e.InputKey); ok {
				e.Conflict = why
			}
		}
		ex.Entries = append(ex.Entries, e)
	}
	if len(ex.Entries) == 0 {
		for _, n := range nodes {
			if rn := recs[n]; rn != nil && rn.out != nil {
				if rec, ok := rn.out.lookup(key); ok {
					ex.Seen = append(ex.Seen, r.stage(n, key, rec, true))
				}
			}
		}
		ex.Gates = gatesOf(g)
	}
	return ex
}

// sinkEntry asks sink n's loop about key; ok is false when it neither
// holds nor wants it. in is the sink's input.
func sinkEntry(ctx context.Context, n *graph.Node, s *sink, in *collection, key node.Key) (SinkEntry, bool) {
	ctx, cancel := context.WithTimeout(ctx, explainWait)
	defer cancel()
	e, found, answered := s.Explain(ctx, key)
	if answered {
		return SinkEntry{Sink: n.Address, Entry: e}, found
	}
	// The loop is not running (its target failed to open) or is stuck in
	// a write: the input still says whether it wants the key.
	if _, ok := in.lookup(key); ok {
		return SinkEntry{Sink: n.Address, Entry: sinkloop.Entry{InputKey: key, TargetKey: key, Wanted: true, Status: "sink not running"}}, true
	}
	return SinkEntry{Sink: n.Address}, false
}

// stages is the record's journey to sink n: every node on the path from
// the origin's source, with what its output holds. Where a record passes
// from objects to records (extract) its key changes from the object's to
// the record's.
func (r *Runtime) stages(sink *graph.Node, org *node.Origin, key node.Key, via string, recs records) []Stage {
	path := pathFrom(sink, org.Source, via)
	out := make([]Stage, 0, len(path))
	for _, n := range path {
		k := key
		if n.Emits == node.Objects {
			k = objectKey(org)
		}
		rec, ok := recs.out(n).lookup(k)
		out = append(out, r.stage(n, k, rec, ok))
	}
	return out
}

func (r *Runtime) stage(n *graph.Node, k node.Key, rec node.Record, ok bool) Stage {
	st := Stage{Node: n.Address, Key: k, Present: ok, Value: rec.Value} // rec is zero when !ok
	if p, isPending := n.Impl().(node.PendingLister); isPending {
		st.PendingDelete, _ = p.PendingDue(k)
	}
	return st
}

func objectKey(o *node.Origin) node.Key {
	switch {
	case o.Object != "":
		return o.Object
	case o.Namespace != "":
		return o.Namespace + "/" + o.Name
	}
	return o.Name
}

// pathFrom returns the nodes from source src down to (not including)
// sink, the first path found through the inputs in their order, or through
// the sink's input via when it is set; nil when src does not feed the sink.
func pathFrom(sink *graph.Node, src, via string) []*graph.Node {
	var walk func(n *graph.Node) []*graph.Node
	walk = func(n *graph.Node) []*graph.Node {
		if n.Address == src {
			return []*graph.Node{n}
		}
		for _, in := range n.Inputs {
			if p := walk(in); p != nil {
				return append(p, n)
			}
		}
		return nil
	}
	for _, in := range sink.Inputs {
		if via != "" && in.Address != via {
			continue
		}
		if p := walk(in); p != nil {
			return p
		}
	}
	return nil
}

// fanInHolders returns, for sink n with several inputs, the input whose
// record carries org (the one the union passed on) and the other inputs
// that hold key. Origins are shared by reference from the source on, so
// the pointer names the input exactly; with a merge, or an input without
// provenance, the first holder stands for it.
func fanInHolders(n *graph.Node, key node.Key, org *node.Origin, recs records) (input string, others []string) {
	var holders []string
	for _, in := range n.Inputs {
		c := recs.out(in)
		if c == nil {
			continue
		}
		if rec, ok := c.lookup(key); ok {
			if input == "" && org != nil && rec.Origin == org {
				input = in.Address
				continue
			}
			holders = append(holders, in.Address)
		}
	}
	if input == "" && len(holders) > 0 {
		input, holders = holders[0], holders[1:]
	}
	return input, holders
}

// gatesOf lists, for every node of g that feeds a sink, the attributes
// that decide which records pass: a source's selectors and a transform's
// runtime expressions. Sensitive attributes are left out.
func gatesOf(g *graph.Graph) []Gate {
	var out []Gate
	for _, n := range g.Nodes {
		if n.Kind == node.KindSink {
			continue
		}
		content, _ := schema.Decode(n.Block.Body, n.Spec.FullBody(), g.Config.Ctx, n.Block.DeclRange)
		for _, a := range n.Spec.Body.Attrs {
			info := a.Info()
			if info.Sensitive || (n.Kind == node.KindTransform && len(info.Roots) == 0) {
				continue
			}
			if attr, ok := content.Attrs[info.Name]; ok {
				rng := attr.Expr.Range()
				out = append(out, Gate{Node: n.Address, Attr: info.Name, Pos: schema.Pos(rng), Text: string(graph.SourceBytes(rng, g.Config))})
			}
		}
	}
	return out
}

// ErrNoKey is returned for an empty key.
var ErrNoKey = errors.New("no key given")

// ValidateKey checks a key asked about from outside.
func ValidateKey(k string) error {
	switch {
	case k == "":
		return ErrNoKey
	case len(k) > 4096:
		return fmt.Errorf("key too long (%d bytes)", len(k))
	}
	return nil
}
