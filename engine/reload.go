package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
)

// Hot reload, make before break. Reload diffs the running graph against a
// new one (DiffGraphs): kept nodes go on running with their state; added
// and rebuilt nodes are started beside the running graph (sources and
// transforms until their output is synced, sinks until their target is
// open and ready, see node.Readier, and the union of a node with several
// inputs, fanin.go, until it is synced; a kept node keeps its union); only
// then the graph is swapped: the replaced sinks stop, the new sinks start
// on their open targets and reconcile against their synced input (so
// unchanged entries are not rewritten), and the replaced sources,
// transforms and unions stop. If any new part fails before the swap, every
// new part is torn down and the running graph was never touched (rolled
// back).

// ReloadResult is the outcome of one reload.
type ReloadResult string

// The reload results, the values of pipeline_config_reloads_total{result}.
const (
	// ReloadApplied: the new graph runs; the config generation rose.
	ReloadApplied ReloadResult = "applied"
	// ReloadRejected: the configuration is invalid; nothing changed.
	ReloadRejected ReloadResult = "rejected"
	// ReloadRolledBack: a new part failed to start; it was torn down and
	// the running graph went on untouched.
	ReloadRolledBack ReloadResult = "rolled_back"
)

// ReloadRecord describes one reload, for GET /reloads, logs and audit.
type ReloadRecord struct {
	// Generation is the config generation after the reload: one more than
	// before when applied, unchanged otherwise.
	Generation uint64 `json:"generation"`
	// Hash is the SHA-256 of the configuration files' contents.
	Hash string `json:"hash,omitempty"`
	// Trigger says what started it: "file", "poll", "signal", ...
	Trigger  string        `json:"trigger,omitempty"`
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration_ns"`
	Result   ReloadResult  `json:"result"`
	// Nodes holds the action for every node of either graph; empty for a
	// rejected configuration.
	Nodes []graph.NodeDiff `json:"nodes,omitempty"`
	// Error says why a reload was rejected or rolled back.
	Error string `json:"error,omitempty"`
	// Diagnostics are the configuration's errors and warnings as
	// file:line:col: summary: detail.
	Diagnostics []string `json:"diagnostics,omitempty"`
	// Warnings are what the reload did that deserves a look: a target it
	// replaced (a pinned map recreated, which programs holding the old map
	// do not see).
	Warnings []string `json:"warnings,omitempty"`
}

// ReloadStatus is the last reload as /readyz shows it.
type ReloadStatus struct {
	Generation uint64       `json:"generation"`
	Result     ReloadResult `json:"result"`
	Time       time.Time    `json:"time"`
	Error      string       `json:"error,omitempty"`
}

// DefaultReloadTimeout bounds how long a reload waits for its new sinks'
// targets to open and be ready and its new sources and transforms to sync
// before it rolls back.
const DefaultReloadTimeout = 30 * time.Second

// reloadHistory is how many reload records Reloads keeps.
const reloadHistory = 32

// reloadState serialises reloads and keeps their records.
type reloadState struct {
	mu      sync.Mutex    // held for a whole reload
	started chan struct{} // closed once Run started the nodes
	closed  bool
	rec     sync.Mutex // guards gen and records, which readers need during a reload
	gen     uint64
	records []ReloadRecord
	last    *ReloadStatus // guarded by Runtime.mu for Readiness
	met     *Metrics
}

func (s *reloadState) init(m *Metrics) {
	s.gen, s.met, s.started = 1, m, make(chan struct{})
}

// close waits for a reload under way and refuses later ones.
func (s *reloadState) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
}

func (s *reloadState) status() *ReloadStatus {
	if s.last == nil {
		return nil
	}
	c := *s.last
	return &c
}

// Generation returns the config generation: 1 for the configuration the
// runtime started with, one more for each applied reload.
func (r *Runtime) Generation() uint64 {
	r.reload.rec.Lock()
	defer r.reload.rec.Unlock()
	return r.reload.gen
}

// Reloads returns the latest reload records, oldest first.
func (r *Runtime) Reloads() []ReloadRecord {
	r.reload.rec.Lock()
	defer r.reload.rec.Unlock()
	return append([]ReloadRecord(nil), r.reload.records...)
}

// Reject records a reload whose configuration did not compile (rec carries
// its Error and Diagnostics): nothing changes but the record, the metrics
// and /readyz. It returns the completed record.
func (r *Runtime) Reject(rec ReloadRecord) ReloadRecord {
	r.reload.mu.Lock()
	defer r.reload.mu.Unlock()
	rec.Result = ReloadRejected
	return r.noteLocked(rec)
}

// Reload replaces the running graph with g, a graph compiled without
// errors, keeping every node whose fingerprint is unchanged (see the top of
// this file). It blocks until the reload is applied or rolled back, and
// returns the completed record (rec carries Trigger, Hash, Diagnostics and
// Started, which defaults to now). It waits for Run to start; ctx bounds
// that wait and the start of the new parts. Reloads are serialised.
func (r *Runtime) Reload(ctx context.Context, g *graph.Graph, rec ReloadRecord, timeout time.Duration) ReloadRecord {
	if rec.Started.IsZero() {
		rec.Started = time.Now()
	}
	var notRunning bool
	select {
	case <-r.reload.started:
	case <-ctx.Done():
		notRunning = true
	}
	r.reload.mu.Lock()
	defer r.reload.mu.Unlock()
	r.mu.RLock()
	cur := r.g
	r.mu.RUnlock()
	err := checkRunnable(g)
	switch {
	case r.reload.closed:
		err = errors.New("the pipeline is shutting down")
	case notRunning:
		err = errors.New("the pipeline is not running yet")
	}
	if err != nil {
		rec.Result, rec.Error = ReloadRejected, err.Error()
		return r.noteLocked(rec)
	}
	if timeout <= 0 {
		timeout = DefaultReloadTimeout
	}
	d := graph.DiffGraphs(cur, g)
	rec.Nodes = d.Nodes
	warnings := r.dec.watchReplaced()
	err = r.apply(ctx, cur, g, d, timeout)
	rec.Warnings = warnings()
	rec.Result = ReloadApplied
	if err != nil {
		rec.Result, rec.Error = ReloadRolledBack, err.Error()
	}
	return r.noteLocked(rec)
}

// noteLocked completes rec and makes it visible: records, metrics,
// /readyz, the log and the audit trails.
func (r *Runtime) noteLocked(rec ReloadRecord) ReloadRecord {
	s := &r.reload
	s.rec.Lock()
	if rec.Result == ReloadApplied {
		s.gen++
		r.dec.setGeneration(s.gen)
	}
	rec.Generation = s.gen
	rec.Duration = time.Since(rec.Started)
	s.records = append(s.records, rec)
	if len(s.records) > reloadHistory {
		s.records = append([]ReloadRecord(nil), s.records[len(s.records)-reloadHistory:]...)
	}
	s.rec.Unlock()
	r.mu.Lock()
	s.last = &ReloadStatus{Generation: rec.Generation, Result: rec.Result, Time: rec.Started, Error: rec.Error}
	r.mu.Unlock()
	if m := s.met; m != nil {
		m.reloads.WithLabelValues(string(rec.Result)).Inc()
		m.SetGeneration(s.gen)
		ok := 0.0
		if rec.Result == ReloadApplied {
			ok = 1
		}
		m.reloadOK.Set(ok)
	}
	counts := graph.GraphDiff{Nodes: rec.Nodes}.Count()
	attrs := []any{"generation", rec.Generation, "result", string(rec.Result), "trigger", rec.Trigger,
		"duration", rec.Duration, "kept", counts[graph.Kept], "rebuilt", counts[graph.Rebuilt], "added", counts[graph.Added], "removed", counts[graph.Removed]}
	kind := node.DecisionReloadApplied
	if rec.Result == ReloadApplied {
		r.opts.Logger.Info("configuration reloaded", attrs...)
	} else {
		kind = node.DecisionReloadRejected
		r.opts.Logger.Error("configuration reload failed; the running graph is unchanged", append(attrs, "err", rec.Error)...)
		for _, d := range rec.Diagnostics {
			r.opts.Logger.Error("configuration error", "err", d)
		}
	}
	r.dec.Decide(node.Decision{Kind: kind, Detail: reloadDetail(rec), ConfigGeneration: rec.Generation,
		Attrs: map[string]string{"result": string(rec.Result), "hash": rec.Hash, "trigger": rec.Trigger,
			"kept": strconv.Itoa(counts[graph.Kept]), "rebuilt": strconv.Itoa(counts[graph.Rebuilt]),
			"added": strconv.Itoa(counts[graph.Added]), "removed": strconv.Itoa(counts[graph.Removed])}})
	return rec
}

func reloadDetail(rec ReloadRecord) string {
	switch rec.Result {
	case ReloadApplied:
		var changed []string
		for _, n := range rec.Nodes {
			switch {
			case n.Action != graph.Kept:
				changed = append(changed, string(n.Action)+" "+n.Address)
			case len(n.InPlace) > 0:
				changed = append(changed, "kept "+n.Address+" with "+strings.Join(n.InPlace, ", ")+" applied in place")
			}
		}
		if len(changed) == 0 {
			return fmt.Sprintf("configuration generation %d applied; every node kept", rec.Generation)
		}
		return fmt.Sprintf("configuration generation %d applied: %s", rec.Generation, strings.Join(changed, ", "))
	case ReloadRolledBack:
		return "reload rolled back; the running graph is unchanged: " + rec.Error
	}
	msg := "reload rejected; the running graph is unchanged: " + rec.Error
	if len(rec.Diagnostics) > 0 {
		msg += " (" + rec.Diagnostics[0] + ")"
	}
	return msg
}
