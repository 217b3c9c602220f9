// Package jpath evaluates JSONPath templates (kubectl's syntax, parsed by
// client-go's jsonpath parser) over decoded JSON values: map[string]any,
// []any, string, int64, float64, json.Number (a number kept as its exact
// text), bool and nil, as the kubernetes source and ctyconv.FromCty give them.
//
// The rules are client-go's (kubectl's) but for one: where `*` and `..`
// walk a map, its keys are visited in sorted order. client-go walks a Go
// map in Go's random order, so a template over a map gave the same value's
// results in a different order from call to call: the extract transform's
// jsonpath() rewrote unchanged targets, and an index_by path gave one
// object a different record key each time it was keyed.
//
// Both the extract transform and the Kubernetes object sources'
// index_by (internal/kobject) evaluate through this package, so the two
// cannot disagree. It imports nothing of ours.
package jpath
