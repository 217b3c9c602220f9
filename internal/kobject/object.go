package kobject

import (
	"errors"
	"fmt"
	"maps"
	"reflect"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/internal/ctyconv"
)

// Value converts an object (already pruned) into the value of its record.
func Value(obj map[string]any) (cty.Value, error) {
	v, err := ctyconv.ToCty(obj)
	if err != nil {
		return cty.NilVal, fmt.Errorf("convert object: %w", err)
	}
	return v, nil
}

// SameContent reports whether two objects are equal apart from
// metadata.resourceVersion, which changes on every write even when nothing
// a pipeline reads does (a managedFields-only update, after ignore_fields).
func SameContent(a, b map[string]any) bool {
	return reflect.DeepEqual(WithoutResourceVersion(a), WithoutResourceVersion(b))
}

// WithoutResourceVersion returns obj, or a shallow copy of it without
// metadata.resourceVersion when it has one. obj is not modified.
func WithoutResourceVersion(obj map[string]any) map[string]any {
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		return obj
	}
	if _, has := md["resourceVersion"]; !has {
		return obj
	}
	out := maps.Clone(obj)
	md = maps.Clone(md)
	delete(md, "resourceVersion")
	out["metadata"] = md
	return out
}

// Reasons of pipeline_source_skipped_objects_total.
const (
	ReasonIndexMissing  = "index_missing" // an index_by path is absent
	ReasonDuplicateKey  = "duplicate_key" // another object provides the key
	ReasonUnconvertible = "unconvertible" // the object has no cty form
	ReasonBadDocument   = "bad_document"  // a file document is not an object
)

// Metrics are the metrics every object source reports. They are registered
// on the node's Registerer, which adds the node label.
type Metrics struct {
	// Objects is pipeline_source_objects: objects the source holds.
	Objects prometheus.Gauge
	// Skipped is pipeline_source_skipped_objects_total{reason}.
	Skipped *prometheus.CounterVec
	// LastSync is pipeline_source_last_sync_timestamp_seconds: when the
	// source last delivered a complete, current state.
	LastSync prometheus.Gauge
}

// NewMetrics registers the shared source metrics on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Objects: prometheus.NewGauge(prometheus.GaugeOpts{Name: "pipeline_source_objects",
			Help: "Objects the source currently holds (before index_by deduplication)."}),
		Skipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pipeline_source_skipped_objects_total",
			Help: "Objects not emitted, by reason: index_missing, duplicate_key, unconvertible, bad_document."}, []string{"reason"}),
		LastSync: prometheus.NewGauge(prometheus.GaugeOpts{Name: "pipeline_source_last_sync_timestamp_seconds",
			Help: "Unix time of the source's last complete synchronisation."}),
	}
	var err error
	m.Objects, err = Register(reg, m.Objects)
	if err != nil {
		return nil, err
	}
	if m.Skipped, err = Register(reg, m.Skipped); err != nil {
		return nil, err
	}
	m.LastSync, err = Register(reg, m.LastSync)
	return m, err
}

// Register registers c on reg, or returns the collector already registered
// under the same name (a node's registry may outlive one Run).
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, fmt.Errorf("register metric: %w", err)
	}
	return c, nil
}
