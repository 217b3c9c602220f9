// Package filter implements transform "filter": it keeps the records for
// which an HCL expression over `record` (record.key, record.value) is true.
// Turning objects into records is transform "extract".
package filter
