package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
)

// SourceState is how far one source got in its initial sync.
type SourceState struct {
	Address string `json:"address"`
	Records int    `json:"records"`
	Synced  bool   `json:"synced"`
}

// SyncOnce runs every source and transform once (node.Env.OneShot; a
// failure fails the whole: there is no one to retry for) until the input
// of every sink has synced, then stops them and returns the sinks' inputs
// (SinkInput reads them after). progress, when set, receives every
// source's state about every 200ms while it waits, and once when they
// synced. It is plan's run; the runtime must not Run as well.
func (r *Runtime) SyncOnce(ctx context.Context, wait time.Duration, progress func([]SourceState)) ([]SourceState, error) {
	r.oneShot = true
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, len(r.g.Nodes))
	for _, n := range r.g.Nodes {
		if n.Kind == node.KindSink {
			continue
		}
		wg.Go(func() {
			err := r.runOnce(runCtx, n)
			if runCtx.Err() == nil {
				if err == nil {
					err = fmt.Errorf("%s: stopped before its input synced", n.Address)
				}
				errs <- err
			}
		})
	}
	for _, rn := range r.nodes { // under Run, each union has a task instead (startFanInLocked)
		if f := rn.fanIn; f != nil {
			wg.Go(func() { f.run(runCtx) })
		}
	}
	defer func() {
		stop()
		wg.Wait()
	}()
	// Sync is polled often (it ends the wait), progress drawn less often.
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var drawn time.Time
	for {
		states, done := r.sourceStates()
		if done {
			if progress != nil {
				progress(states)
			}
			return states, nil
		}
		if progress != nil && time.Since(drawn) >= 200*time.Millisecond {
			progress(states)
			drawn = time.Now()
		}
		select {
		case err := <-errs:
			return nil, err
		case <-ctx.Done():
			var waiting []string
			for _, n := range r.g.Nodes {
				if n.Kind != node.KindSource || r.nodes[n].out.isSynced() {
					continue
				}
				// What the source last said of itself tells a user what to fix.
				if st := r.nodes[n].health.status(n.Address, false); st.Detail != "" {
					waiting = append(waiting, fmt.Sprintf("%s (%s: %s)", n.Address, st.State, st.Detail))
				} else {
					waiting = append(waiting, n.Address)
				}
			}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, fmt.Errorf("not synced after %s: %s", wait, strings.Join(waiting, ", "))
			}
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// sourceStates returns every source's progress and whether every sink's
// input has synced.
func (r *Runtime) sourceStates() ([]SourceState, bool) {
	// Synced first, counts after: once synced, a count read later is the
	// synced state's (or newer), never an earlier, partial one.
	done := !slices.ContainsFunc(r.g.Nodes, func(n *graph.Node) bool { return n.Kind == node.KindSink && !r.inputOf(n).isSynced() })
	var out []SourceState
	for _, n := range r.g.Nodes {
		if n.Kind == node.KindSource {
			c := r.nodes[n].out
			c.mu.Lock()
			out = append(out, SourceState{Address: n.Address, Records: len(c.state), Synced: c.synced})
			c.mu.Unlock()
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out, done
}

// SinkInput is the snapshot sink n consumes.
func (r *Runtime) SinkInput(n *graph.Node) []node.Record {
	recs, _, _ := r.inputOf(n).snapshot()
	return recs
}

// InputRecord is the record at key k of sink n's input.
func (r *Runtime) InputRecord(n *graph.Node, k node.Key) (node.Record, bool) {
	return r.inputOf(n).Held(k)
}

// TargetEnv is what plan opens sink n's target with: n's logger and
// health, no metrics.
func (r *Runtime) TargetEnv(n *graph.Node) node.Env {
	return node.Env{Logger: r.logger(n), Health: nodeHealth{r.healthOf(n)}, Address: n.Address, Metrics: discardRegisterer{}}
}

// Status is the health node addr reports of itself, as Readiness shows
// it for a synced output; false when the graph has no such node.
func (r *Runtime) Status(addr string) (NodeStatus, bool) {
	r.mu.RLock()
	rn := r.nodes[r.g.Node(addr)]
	r.mu.RUnlock()
	if rn == nil {
		return NodeStatus{}, false
	}
	return rn.health.status(addr, true), true
}

// OriginName names the source object of org, the provenance of input
// key k: "pod shop/web-1", or the source's address when the source has no
// node.Noun, and k when org names no object (a source whose records are
// not objects passes its keys on).
func (r *Runtime) OriginName(org *node.Origin, k node.Key) string {
	noun := org.Source
	if src := r.g.Node(org.Source); src != nil {
		if nn, ok := src.Source.(node.Noun); ok {
			noun = nn.Noun()
		}
	}
	if org.Object != "" || org.Name != "" {
		k = objectKey(org)
	}
	return noun + " " + k
}
