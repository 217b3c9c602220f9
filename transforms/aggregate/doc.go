// Package aggregate implements transform "aggregate": records computed from
// the whole input collection at once, for what one record alone cannot say
// (a join of routes with the Services they name, a count per group, a
// condition computed from several kinds of records).
//
// On every change of its input, once the input has synced, it evaluates
// its `let` values and its `for_each` over the sorted list of all input
// records, builds one record per element with `key` and `value`, and
// publishes the difference from its previous output (Output.Replace). A
// failed evaluation keeps the previous output. An evaluation evaluates
// again only what the change affects (memo.go), with the result of a full
// one.
//
// Not here: one object to records, evaluated per object, is transform
// "extract" (cheaper: a change re-evaluates only its own object); keeping
// records by a condition is "filter"; timing is "debounce".
package aggregate
