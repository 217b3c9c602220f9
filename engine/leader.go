package engine

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Leadership gates the writes of every sink of a runtime when several
// instances of one configuration run side by side. Whoever holds the lease
// (cmd/pipeline runs client-go's elector) reports each acquisition and
// renewal with Lead, and the sinks write only while the last report is
// fresh. Sources and transforms run regardless, so a follower keeps its
// inputs synced and takes over with one full reconcile.
//
// Leadership is time-bounded on purpose: Lead(until) lets the sinks write
// until the given instant and no later, even if the elector never calls
// Lose (a stuck process, a partitioned API server). The elector passes the
// time it sent the renewal plus renew_deadline, which is shorter than
// lease_duration, so a leader that lost its lease has stopped writing
// before any other instance may acquire it.
type Leadership struct {
	identity string

	mu      sync.Mutex
	until   time.Time // writes are allowed before this instant
	term    uint64    // rises every time this instance starts leading
	changed chan struct{}
	terms   prometheus.Counter
}

// NewLeadership returns a gate that starts as a follower. identity names
// this instance in /readyz.
func NewLeadership(identity string) *Leadership {
	return &Leadership{identity: identity, changed: make(chan struct{}),
		terms: prometheus.NewCounter(prometheus.CounterOpts{Name: "pipeline_leader_terms_total",
			Help: "Times this instance started leading."})}
}

// Lead records that this instance holds the lease and may write until
// until. A call after the previous lead expired starts a new term: the
// sinks then read their targets again before writing.
func (l *Leadership) Lead(until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if !now.Before(l.until) && now.Before(until) {
		l.term++
		l.terms.Inc()
		l.notifyLocked()
	}
	if until.After(l.until) {
		l.until = until
	}
}

// Lose stops writes at once: the lease is lost or being released.
func (l *Leadership) Lose() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if time.Now().Before(l.until) {
		l.notifyLocked()
	}
	l.until = time.Time{}
}

func (l *Leadership) notifyLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// Term returns the current term and whether this instance may write now.
func (l *Leadership) Term() (uint64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.term, time.Now().Before(l.until)
}

// Changed returns a channel closed at the next start or stop of leading.
func (l *Leadership) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// Leading reports whether this instance may write now.
func (l *Leadership) Leading() bool {
	_, ok := l.Term()
	return ok
}

// LeaderStatus is the leader_election row of /readyz.
type LeaderStatus struct {
	Identity string `json:"identity"`
	Leading  bool   `json:"leading"`
}

// Status returns this instance's row for /readyz.
func (l *Leadership) Status() *LeaderStatus {
	return &LeaderStatus{Identity: l.identity, Leading: l.Leading()}
}

// Collectors returns pipeline_leader_leading (1 while this instance may
// write) and pipeline_leader_terms_total, for the process registry.
func (l *Leadership) Collectors() []prometheus.Collector {
	leading := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "pipeline_leader_leading",
		Help: "1 while this instance holds the leader election lease and its sinks write, else 0."},
		func() float64 {
			if l.Leading() {
				return 1
			}
			return 0
		})
	return []prometheus.Collector{leading, l.terms}
}
