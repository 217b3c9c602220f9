package engine

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
)

// decisionBacklog bounds the decisions kept for recorders that are not open
// yet (or are restarting).
const decisionBacklog = 1024

// decisions hands the engine's and the nodes' decisions to the open targets
// that record them (node.DecisionRecorder), and makes every sink wait
// before writing while a gate (node.Gate: audit with fail = "closed") is
// shut.
//
// Decisions are numbered; each recorder address remembers the last one it
// received, so a recorder opened late or restarted gets what it missed
// (bounded by decisionBacklog) and never gets one twice.
type decisions struct {
	log   *slog.Logger
	gates atomic.Pointer[map[string]node.Gate] // sink address -> gate; a reload swaps the map

	mu        sync.Mutex // serialises delivery, so recorders see one order
	seq       uint64
	backlog   []numbered
	recorders map[string]node.DecisionRecorder
	delivered map[string]uint64
	states    map[string]node.State // last sink state reported as a decision
	gen       uint64
	warnings  *[]string // while a reload applies: the details of its target_replaced decisions
}

// watchReplaced collects the target_replaced decisions taken until the
// returned function is called, which returns their details (a reload's
// warnings).
func (d *decisions) watchReplaced() func() []string {
	var out []string
	d.mu.Lock()
	d.warnings = &out
	d.mu.Unlock()
	return func() []string {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.warnings = nil
		return out
	}
}

type numbered struct {
	seq uint64
	d   node.Decision
}

func newDecisions(g *graph.Graph, log *slog.Logger) *decisions {
	d := &decisions{log: log, recorders: map[string]node.DecisionRecorder{},
		delivered: map[string]uint64{}, states: map[string]node.State{}, gen: 1}
	d.setGates(g)
	return d
}

// setGates takes the gates of g's sinks.
func (d *decisions) setGates(g *graph.Graph) {
	gates := map[string]node.Gate{}
	for _, n := range g.Nodes {
		if gate, ok := n.Sink.(node.Gate); ok {
			gates[n.Address] = gate
		}
	}
	d.gates.Store(&gates)
}

// setGeneration stamps later decisions with the config generation.
func (d *decisions) setGeneration(gen uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gen = gen
}

// Decide is node.Env.Decisions of every node.
func (d *decisions) Decide(x node.Decision) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if x.Time.IsZero() {
		x.Time = time.Now()
	}
	if x.ConfigGeneration == 0 {
		x.ConfigGeneration = d.gen
	}
	if d.warnings != nil && x.Kind == node.DecisionTargetReplaced {
		*d.warnings = append(*d.warnings, x.Node+": "+x.Detail)
	}
	d.seq++
	d.backlog = append(d.backlog, numbered{d.seq, x})
	if len(d.backlog) > decisionBacklog {
		d.backlog = d.backlog[len(d.backlog)-decisionBacklog:]
	}
	for addr, r := range d.recorders {
		d.deliverLocked(addr, r, numbered{d.seq, x})
	}
}

func (d *decisions) deliverLocked(addr string, r node.DecisionRecorder, x numbered) {
	d.delivered[addr] = x.seq
	if err := r.RecordDecision(x.d); err != nil {
		d.log.Warn("decision not recorded", "node", addr, "kind", string(x.d.Kind), "err", err)
	}
}

// attach starts handing decisions to t when it records them, beginning with
// the backlog it has not seen.
func (d *decisions) attach(addr string, t node.Target) {
	r, ok := t.(node.DecisionRecorder)
	if !ok {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, x := range d.backlog {
		if x.seq > d.delivered[addr] {
			d.deliverLocked(addr, r, x)
		}
	}
	d.recorders[addr] = r
}

// detach stops handing decisions to the target of addr.
func (d *decisions) detach(addr string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.recorders, addr)
}

// waitGates blocks sink addr, before it writes, while any other sink's
// gate is shut. It returns false when ctx ended first: the sink must not
// write then. A gate never waits for a gate, so two closed audit trails
// cannot deadlock.
func (d *decisions) waitGates(ctx context.Context, addr string, h *health, log *slog.Logger, writes int) bool {
	if writes == 0 {
		return true
	}
	gates := *d.gates.Load() // a reload swaps the map, never changes it
	if _, self := gates[addr]; self {
		return true
	}
	for other, g := range gates {
		if g.Wait() == nil {
			continue
		}
		h.set(false, node.Degraded, "writes wait until "+other+" can record them")
		log.Warn("writes wait until the audit trail records again", "err", other+" cannot record changes")
		if node.WaitGate(ctx, g) != nil {
			return false
		}
		log.Info("writes released")
	}
	return true
}

// noteHealth turns sink addr's move into or out of Degraded into a decision.
func (d *decisions) noteHealth(addr string, h *health) {
	h.mu.Lock()
	now, detail := h.eng, h.engMsg
	h.mu.Unlock()
	d.mu.Lock()
	before, seen := d.states[addr]
	d.states[addr] = now
	d.mu.Unlock()
	switch {
	case now == node.Degraded && before != node.Degraded:
		d.Decide(node.Decision{Kind: node.DecisionSinkDegraded, Node: addr, Detail: detail})
	case seen && before == node.Degraded && now == node.Healthy:
		d.Decide(node.Decision{Kind: node.DecisionSinkRecovered, Node: addr})
	}
}

// noteDrift records that a full reconcile of sink addr found count entries
// of the target changed behind the engine's back and is writing them back.
func (d *decisions) noteDrift(addr string, count int) {
	d.Decide(node.Decision{Kind: node.DecisionDriftRepaired, Node: addr,
		Detail: fmt.Sprintf("%d entries differed from what was written; repairing", count),
		Attrs:  map[string]string{"count": strconv.Itoa(count)}})
}

// noteBrake records that sink addr's deletion brake holds braked deletes
// (more than before), or released those it held (braked 0).
func (d *decisions) noteBrake(addr string, braked int, detail string) {
	kind := node.DecisionDeletesBraked
	if braked == 0 {
		kind = node.DecisionDeletesReleased
	}
	d.Decide(node.Decision{Kind: kind, Node: addr, Detail: detail, Attrs: map[string]string{"count": strconv.Itoa(braked)}})
}

// configLoaded records that the runtime starts with its graph.
func (r *Runtime) configLoaded() {
	var files string
	if r.g.Config != nil {
		files = strings.Join(slices.Sorted(maps.Keys(r.g.Config.Files)), ",")
	}
	r.dec.Decide(node.Decision{Kind: node.DecisionConfigLoaded,
		Detail: fmt.Sprintf("configuration loaded with %d nodes", len(r.g.Nodes)),
		Attrs:  map[string]string{"nodes": strconv.Itoa(len(r.g.Nodes)), "files": files}})
}
