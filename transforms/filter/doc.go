// Package filter implements transform "filter": it keeps the records for
// which an HCL expression over `record` (record.key, record.value) is true
// and drops the others, emitting what it receives (objects or records).
//
// It holds no state: an upsert that no longer matches becomes a delete (the
// key may have passed before; the engine's collection drops the delete when
// it did not), and a Reset of the input is filtered whole and published with
// Output.Replace. An expression error on one record is counted and logged,
// and that record is dropped; the pipeline goes on.
//
// Not here: reshaping objects into records (or yielding several records per
// object) is transform "extract"; timing is "debounce" and "grace_period".
package filter
