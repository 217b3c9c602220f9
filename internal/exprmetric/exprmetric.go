// Package exprmetric declares pipeline_transform_expression_errors_total,
// which every transform evaluating expressions registers under its node
// label. The engine gathers all nodes' metrics as one exposition, where
// Prometheus requires one family's help text to be the same everywhere,
// so the counter is declared once, here.
//
// Not here: a transform's other metrics, which only it registers.
package exprmetric

import "github.com/prometheus/client_golang/prometheus"

// NewErrors returns a new pipeline_transform_expression_errors_total.
func NewErrors() prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: "pipeline_transform_expression_errors_total",
		Help: "Evaluations of the transform's expressions that failed; what then becomes of the record (dropped, skipped, or the previous output kept) is in the transform's documentation."})
}
