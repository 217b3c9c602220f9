// Package prometheus implements sink "prometheus": each record becomes one
// series of one metric family, served on the instance's own /metrics next
// to the engine's metrics. The target is the set of series the process
// serves, keyed by record key, so it is level-triggered like every keyed
// sink: a record gone removes its series, and a restarted process serves
// exactly what the records say. Checks of names, types and label names run
// at load (spec.go, check.go); the series and their encoding are
// series.go; serving is target.go. Sending values to a remote
// Prometheus-compatible store (remote write) is not this sink's job.
package prometheus
