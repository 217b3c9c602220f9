package engine

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// fanIn makes the union of a node's inputs (inputs = [a, b]) into the one
// collection the node consumes. It keeps what each input holds; a key is
// in the union while any input holds it, with the value its conflict rule
// picks; the union is synced once every input is, so its consumer never
// deletes before all of them delivered their initial state. Its goroutine
// lives as long as its definition: a reload keeps it while its inputs are
// kept and its conflict rule unchanged, handing it to a rebuilt consumer,
// and else stages a new one beside the running graph (reload_apply.go).
type fanIn struct {
	n         *graph.Node
	ins       []*collection
	out       *collection
	log       *slog.Logger
	conflicts prometheus.Counter
	reg       *prometheus.Registry // holds conflicts; nil without metrics
	ctx       *hcl.EvalContext     // for merge; nil without one
	task      *task                // its goroutine under Run; guarded by Runtime.mu

	held    []map[node.Key]node.Record // what each input holds; the goroutine's own
	synced  []bool
	touched map[node.Key]struct{}
	order   []node.Key

	mu      sync.Mutex
	clashes map[node.Key]string // keys in conflict now and why, for explain
	nclash  atomic.Int64        // len(clashes), so settle costs no lock when none

	inflight atomic.Int32 // events taken from an input and not yet handled (sandbox.go)
}

// newFanInLocked prepares the union of n's inputs, which must be added;
// cfg evaluates its merge expression.
func (r *Runtime) newFanInLocked(n *graph.Node, cfg *schema.Config) *fanIn {
	f := &fanIn{n: n, out: newCollection(r.opts.QueueLimit, nil), log: r.logger(n).With("op", "fan-in"),
		held: make([]map[node.Key]node.Record, len(n.Inputs)), synced: make([]bool, len(n.Inputs)),
		touched: map[node.Key]struct{}{}, clashes: map[node.Key]string{}}
	for i, in := range n.Inputs {
		f.ins = append(f.ins, r.nodes[in].out)
		f.held[i] = map[node.Key]node.Record{}
	}
	if n.Merge != nil && cfg != nil {
		f.ctx = cfg.Ctx.NewChild()
		f.ctx.Functions = cfg.Ctx.Functions
	}
	f.conflicts = prometheus.NewCounter(prometheus.CounterOpts{Name: "pipeline_node_conflicts_total",
		Help: "Keys that two inputs of a fan-in came to hold with different values that its conflict rule could not resolve (on_conflict = \"error\", or a failing merge)."})
	if r.opts.Metrics != nil {
		f.reg = prometheus.NewRegistry()
		prometheus.WrapRegistererWith(prometheus.Labels{"node": n.Address}, f.reg).MustRegister(f.conflicts)
	}
	return f
}

// showFanIn shows the metrics of f, n's union, or hides n's union's when
// f is nil (its consumer is retired).
func (r *Runtime) showFanIn(n *graph.Node, f *fanIn) {
	m := r.opts.Metrics
	if m == nil {
		return
	}
	var reg *prometheus.Registry
	if f != nil {
		reg = f.reg
	}
	m.nodeGatherer.set(n.Address+" fan-in", reg)
}

// inputOf returns the collection n consumes: its input's, or the union of
// its inputs; nil for a source.
func (r *Runtime) inputOf(n *graph.Node) *collection {
	if f := r.nodes[n].fanIn; f != nil {
		return f.out
	}
	return r.nodes.out(n.Input())
}

// startFanInLocked runs f until its task stops or the other nodes' context
// ends.
func (r *Runtime) startFanInLocked(f *fanIn) { f.task = startTask(r.restCtx, f.run) }

// stopFanIns stops the unions of nodes, but those in keep, and waits for
// their goroutines.
func (r *Runtime) stopFanIns(nodes []*graph.Node, keep map[*fanIn]bool) {
	var ts []*task
	r.mu.RLock()
	for _, n := range nodes {
		if f := r.nodes[n].fanIn; f != nil && f.task != nil && !keep[f] {
			ts = append(ts, f.task)
		}
	}
	r.mu.RUnlock()
	for _, t := range ts {
		t.stop()
	}
}

// sameUnion reports whether n, a new node, makes the same union as o, the
// running node at its address: the same running inputs in the same order
// and the same conflict rule. Its consumer may differ (a sink attribute
// changed): the union is handed over with what it holds.
func sameUnion(o, n *graph.Node) bool {
	rule, merge := node.OnConflictAttr.Name(), node.MergeAttr.Name()
	return o.FanIn() && slices.Equal(o.Inputs, n.Inputs) && // n's inputs are the merged graph's: equal only when kept
		o.Parts[rule] == n.Parts[rule] && o.Parts[merge] == n.Parts[merge]
}

// run merges the inputs' events until ctx ends.
func (f *fanIn) run(ctx context.Context) {
	type tagged struct {
		i  int
		ev node.Event
	}
	events := make(chan tagged)
	var wg sync.WaitGroup
	defer wg.Wait()
	for i, c := range f.ins {
		sub := c.subscribe(nil)
		wg.Go(func() {
			defer c.unsubscribe(sub)
			for ev, err := sub.Next(ctx); err == nil; ev, err = sub.Next(ctx) {
				f.inflight.Add(1) // before this pump asks again: a config test sees the event in flight
				select {
				case events <- tagged{i, ev}:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	for {
		select {
		case <-ctx.Done():
			return
		case t := <-events:
			f.handle(t.i, t.ev)
			f.inflight.Add(-1)
		}
	}
}

// handle applies one event of input i and publishes the union's changes.
func (f *fanIn) handle(i int, ev node.Event) {
	if ev.Reset {
		old := f.held[i]
		f.held[i] = make(map[node.Key]node.Record, len(ev.Snapshot))
		for k := range old {
			f.touch(k)
		}
		for _, rec := range ev.Snapshot {
			f.held[i][rec.Key] = rec
			f.touch(rec.Key)
		}
	}
	for _, d := range ev.Deltas {
		if d.Delete {
			delete(f.held[i], d.Key)
		} else {
			f.held[i][d.Key] = node.Record{Key: d.Key, Value: d.Value, Origin: d.Origin}
		}
		f.touch(d.Key)
	}
	if len(f.order) > 0 {
		var at time.Time // the union's deltas carry the event's last one's (zero for a Reset)
		if n := len(ev.Deltas); n > 0 {
			at = ev.Deltas[n-1].Time
		}
		out := make([]node.Delta, 0, len(f.order))
		for _, k := range f.order {
			out = append(out, f.resolve(k, at))
		}
		clear(f.touched)
		f.order = f.order[:0]
		f.out.Apply(out)
	}
	if ev.Synced && !f.synced[i] {
		f.synced[i] = true
		if slices.Contains(f.synced, false) {
			return
		}
		f.out.MarkSynced()
		f.log.Debug("every input synced", "count", len(f.synced))
	}
}

func (f *fanIn) touch(k node.Key) {
	if _, ok := f.touched[k]; !ok {
		f.touched[k] = struct{}{}
		f.order = append(f.order, k)
	}
}

func upsert(r node.Record, at time.Time) node.Delta {
	d := node.Upsert(r.Key, r.Value, at)
	d.Origin = r.Origin
	return d
}

// resolve returns the union's delta for key k: a delete when no input
// holds it, else the value the conflict rule picks.
func (f *fanIn) resolve(k node.Key, at time.Time) node.Delta {
	var first, last node.Record
	holders, fi := 0, 0 // fi: the first holder's input
	for i := range f.held {
		if r, ok := f.held[i][k]; ok {
			if holders == 0 {
				first, fi = r, i
			}
			last = r
			holders++
		}
	}
	switch {
	case holders == 0:
		f.settle(k)
		return node.Remove(k, at)
	case holders == 1:
		f.settle(k)
		return upsert(first, at)
	case f.n.Merge != nil:
		return f.merge(k, first, at)
	case f.n.OnConflict == node.ConflictFirst:
		return upsert(first, at)
	case f.n.OnConflict == node.ConflictLast:
		return upsert(last, at)
	}
	// on_conflict = "error": equal values are no conflict.
	var differ []string
	for i := range f.held {
		if r, ok := f.held[i][k]; ok && !r.Value.RawEquals(first.Value) {
			differ = append(differ, f.n.Inputs[i].Address)
		}
	}
	if len(differ) == 0 {
		f.settle(k)
	} else {
		in := f.n.Inputs[fi].Address
		f.clash(k, fmt.Sprintf("%s holds a value different from %s's; the key keeps %s's (on_conflict = \"error\")",
			strings.Join(differ, " and "), in, in))
	}
	return upsert(first, at)
}

// merge evaluates the merge expression over the values of every input
// holding k, in the order of inputs. A failure is a conflict: the key
// keeps the first input's value.
func (f *fanIn) merge(k node.Key, first node.Record, at time.Time) node.Delta {
	var vals []cty.Value
	for i := range f.held {
		if r, ok := f.held[i][k]; ok {
			vals = append(vals, r.Value)
		}
	}
	v, err := f.evalMerge(k, vals)
	if err != nil {
		f.clash(k, "merge failed: "+err.Error())
		return upsert(first, at)
	}
	f.settle(k)
	first.Value = v
	return upsert(first, at)
}

func (f *fanIn) evalMerge(k node.Key, vals []cty.Value) (v cty.Value, err error) {
	defer func() {
		if p := recover(); p != nil { // a function's bug must not stop the pipeline
			v, err = cty.NilVal, fmt.Errorf("expression panicked: %v", p)
		}
	}()
	ctx := f.ctx.NewChild()
	ctx.Variables = map[string]cty.Value{"key": cty.StringVal(k), "values": cty.TupleVal(vals)}
	v, diags := f.n.Merge.Value(ctx)
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	if v.IsNull() || !v.IsWhollyKnown() {
		return cty.NilVal, fmt.Errorf("merge yielded no value")
	}
	return v, nil
}

// clash records that k is in conflict; a new conflict is counted and
// logged once.
func (f *fanIn) clash(k node.Key, why string) {
	f.mu.Lock()
	_, was := f.clashes[k]
	f.clashes[k] = why
	f.nclash.Store(int64(len(f.clashes)))
	f.mu.Unlock()
	if !was {
		f.conflicts.Inc()
		f.log.Warn("inputs conflict on a key", "key", k, "err", why)
	}
}

// settle records that k is not in conflict.
func (f *fanIn) settle(k node.Key) {
	if f.nclash.Load() == 0 {
		return
	}
	f.mu.Lock()
	delete(f.clashes, k)
	f.nclash.Store(int64(len(f.clashes)))
	f.mu.Unlock()
}

// conflict returns why k is in conflict, if it is.
func (f *fanIn) conflict(k node.Key) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	why, ok := f.clashes[k]
	return why, ok
}

// collections returns every collection of the runtime: the nodes' outputs
// and the unions of fan-ins.
func (r *Runtime) collections() []*collection {
	var out []*collection
	for _, rn := range r.nodes {
		if rn.out != nil {
			out = append(out, rn.out)
		}
		if rn.fanIn != nil {
			out = append(out, rn.fanIn.out)
		}
	}
	return out
}
