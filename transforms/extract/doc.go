// Package extract implements transform "extract": every input object yields
// zero or more records through HCL expressions (where, for_each, key, value)
// evaluated per object, with object and each in scope and a jsonpath()
// function. Keeping records conditionally is transform "filter"; timing is
// debounce and graceperiod.
//
// Several objects may yield the same record key (two hostNetwork pods share
// their node's IP). The record lives while any object yields it, and its
// value is the one from the object with the smallest key, so deleting one
// pod never removes an IP another pod still uses.
package extract
