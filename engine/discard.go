package engine

import "github.com/prometheus/client_golang/prometheus"

// discardRegisterer accepts and forgets collectors (runs without metrics).
type discardRegisterer struct{}

func (discardRegisterer) Register(prometheus.Collector) error  { return nil }
func (discardRegisterer) MustRegister(...prometheus.Collector) {}
func (discardRegisterer) Unregister(prometheus.Collector) bool { return true }
