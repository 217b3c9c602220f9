package engine

import (
	"sync"
	"time"

	"github.com/pipeline/pipeline/engine/node"
)

// health holds one node's health as reported by the node itself and by the
// engine (the sink loop, the supervisor). The worse of the two is shown.
type health struct {
	mu       sync.Mutex
	own      node.State
	ownMsg   string
	eng      node.State
	engMsg   string
	since    time.Time
	restarts int
}

// nodeHealth is the node-facing half, handed out as node.Env.Health.
type nodeHealth struct{ h *health }

func (n nodeHealth) Set(s node.State, detail string) { n.h.set(true, s, detail) }

func (h *health) set(own bool, s node.State, detail string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	before, _ := h.effectiveLocked()
	if own {
		h.own, h.ownMsg = s, detail
	} else {
		h.eng, h.engMsg = s, detail
	}
	if after, _ := h.effectiveLocked(); after != before {
		h.since = time.Now()
	}
}

func (h *health) effectiveLocked() (node.State, string) {
	if h.eng > h.own || (h.eng == h.own && h.engMsg != "" && h.ownMsg == "") { // worse, or as bad and saying why
		return h.eng, h.engMsg
	}
	return h.own, h.ownMsg
}

// NodeStatus is one node's row in /readyz and `pipeline run` logs.
type NodeStatus struct {
	Address  string    `json:"address"`
	State    string    `json:"state"`
	Detail   string    `json:"detail,omitempty"`
	Synced   bool      `json:"synced"`
	Since    time.Time `json:"since,omitempty"`
	Restarts int       `json:"restarts,omitempty"`
	Ready    bool      `json:"ready"`
}

// Readiness is the body of /readyz.
type Readiness struct {
	Ready bool         `json:"ready"`
	Nodes []NodeStatus `json:"nodes"`
	// Leader is present with leader election: a follower is ready too
	// (its sources are synced), its sinks wait in standby.
	Leader *LeaderStatus `json:"leader_election,omitempty"`
	// LastReload is present once a reload was tried: a failed one shows
	// its error here while the running graph keeps serving.
	LastReload *ReloadStatus `json:"last_reload,omitempty"`
}

func (h *health) status(addr string, synced bool) NodeStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, msg := h.effectiveLocked()
	return NodeStatus{Address: addr, State: s.String(), Detail: msg, Synced: synced, Since: h.since, Restarts: h.restarts}
}
