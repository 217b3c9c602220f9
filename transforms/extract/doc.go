// Package extract implements transform "extract": every input object yields
// zero or more records through HCL expressions (where, for_each, key, value)
// evaluated per object, with object and each in scope and a jsonpath()
// function: client-go parses its templates, internal/jpath walks them
// (a map's keys in sorted order).
//
// The transform keeps two indexes: object key -> record keys it yields, and
// record key -> owners (the objects yielding it, with their values). Several
// objects may yield the same record key (two hostNetwork pods share their
// node's IP): the record lives while any owner yields it, and its value is
// the one of the owner with the smallest key, so the output does not depend
// on arrival order and deleting one pod never removes an IP another pod
// still uses. A Reset of the input rebuilds both indexes and publishes with
// Output.Replace; a batch of deltas publishes only the records whose
// existence or value changed, each carrying the Time of the input delta
// that changed it.
//
// An expression error on one object is counted and logged (once per object
// until it evaluates again) and that object yields nothing; the pipeline
// goes on.
//
// Not here: keeping or dropping whole records is transform "filter" (cheaper
// when no reshaping is needed); timing is "debounce" and "grace_period".
package extract
