package kubernetes

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/kobject"
)

// Values of pipeline_source_connection_status.
const (
	statusDisconnected = 0 // not connected: never yet, or down
	statusConnected    = 1 // the last list or watch call succeeded
	statusDegraded     = 2 // list or watch calls are failing, for less than disconnect_after
)

// metrics are the source's metrics: the shared object-source ones plus the
// connection ones.
type metrics struct {
	*kobject.Metrics
	reconnects prometheus.Counter
	status     prometheus.Gauge
	events     *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	shared, err := kobject.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	m := &metrics{Metrics: shared,
		reconnects: prometheus.NewCounter(prometheus.CounterOpts{Name: "pipeline_source_watch_reconnects_total",
			Help: "Times the watch recovered after list or watch errors."}),
		status: prometheus.NewGauge(prometheus.GaugeOpts{Name: "pipeline_source_connection_status",
			Help: "Connection to the API server: 0 disconnected, 1 connected, 2 degraded (watch errors)."}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pipeline_source_events_total",
			Help: "Object events received from the API server, by type: add, update, delete."}, []string{"type"}),
	}
	if m.reconnects, err = kobject.Register(reg, m.reconnects); err != nil {
		return nil, err
	}
	if m.status, err = kobject.Register(reg, m.status); err != nil {
		return nil, err
	}
	m.events, err = kobject.Register(reg, m.events)
	return m, err
}

// monitor turns list/watch outcomes, the initial sync and the active health
// check into the node's health and connection metrics:
//
//	pending (not synced) -> healthy -> degraded (calls failing)
//	  -> down (failing for disconnect_after, or the health check failing)
//
// and back to healthy at the next successful call, without a restart.
type monitor struct {
	health          node.Health
	log             *slog.Logger
	m               *metrics
	disconnectAfter time.Duration

	mu        sync.Mutex
	synced    bool
	connected bool      // a list or watch call succeeded
	failing   bool      // calls fail since `since`
	since     time.Time // first failure of the current streak
	lastErr   error
	checkErr  error // the last active health check's error
	state     node.State
	detail    string
	reported  bool
}

// ok records a successful list or watch call.
func (mo *monitor) ok() {
	mo.mu.Lock()
	defer mo.mu.Unlock()
	mo.connected = true
	if mo.failing {
		mo.failing, mo.lastErr = false, nil
		mo.m.reconnects.Inc()
		if mo.synced {
			mo.m.LastSync.SetToCurrentTime()
		}
		mo.log.Info("watch reconnected", "duration", time.Since(mo.since).Round(time.Millisecond))
	}
	mo.publish(time.Now())
}

// fail records a failed list or watch call.
func (mo *monitor) fail(err error) {
	mo.mu.Lock()
	defer mo.mu.Unlock()
	if !mo.failing {
		mo.failing, mo.since = true, time.Now()
		mo.log.Warn("watch failed; retrying", "err", err)
	} else {
		mo.log.Debug("watch still failing", "err", err)
	}
	mo.lastErr = err
	mo.publish(time.Now())
}

// down reports a failure that ends the run (connection checks, discovery).
// It does not log: the run returns the error, and the engine logs it once
// with the restart it schedules.
func (mo *monitor) down(err error) {
	mo.mu.Lock()
	defer mo.mu.Unlock()
	mo.reported = false // a run that never watched has no "down" transition to log
	mo.set(node.Down, err.Error(), statusDisconnected)
}

func (mo *monitor) setSynced() {
	mo.mu.Lock()
	defer mo.mu.Unlock()
	mo.synced = true
	mo.m.LastSync.SetToCurrentTime()
	mo.publish(time.Now())
}

// checked records the result of an active health check.
func (mo *monitor) checked(err error) {
	mo.mu.Lock()
	defer mo.mu.Unlock()
	if (err == nil) != (mo.checkErr == nil) {
		if err != nil {
			mo.log.Warn("health check failed", "err", err)
		} else {
			mo.log.Info("health check recovered")
		}
	}
	mo.checkErr = err
	mo.publish(time.Now())
}

// tick re-evaluates time-based transitions (degraded -> down).
func (mo *monitor) tick(now time.Time) {
	mo.mu.Lock()
	defer mo.mu.Unlock()
	mo.publish(now)
}

func (mo *monitor) publish(now time.Time) {
	switch {
	case mo.checkErr != nil:
		mo.set(node.Down, "health check failed: "+mo.checkErr.Error(), statusDisconnected)
	case mo.failing && now.Sub(mo.since) >= mo.disconnectAfter:
		mo.set(node.Down, fmt.Sprintf("disconnected: watch failing for %s: %v", now.Sub(mo.since).Round(time.Second), mo.lastErr), statusDisconnected)
	case mo.failing:
		mo.set(node.Degraded, "watch failing: "+mo.lastErr.Error(), statusDegraded)
	case !mo.synced:
		status := float64(statusDisconnected)
		if mo.connected {
			status = statusConnected
		}
		mo.set(node.Pending, "initial sync", status)
	default:
		mo.set(node.Healthy, "", statusConnected)
	}
}

func (mo *monitor) set(s node.State, detail string, status float64) {
	mo.m.status.Set(status)
	if mo.reported && s == mo.state && detail == mo.detail {
		return
	}
	if mo.reported && s != mo.state && s == node.Down {
		mo.log.Warn("source down", "err", detail)
	}
	mo.state, mo.detail, mo.reported = s, detail, true
	mo.health.Set(s, detail)
}
