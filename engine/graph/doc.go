// Package graph is the static model of a configuration: Compile turns a
// loaded configuration into typed nodes in topological order (inputs,
// fan-in rules, claims, projections, every problem reported at once), each
// node's fingerprint digests its effective definition, and DiffGraphs
// compares two graphs by those fingerprints (what a reload keeps, rebuilds,
// adds and removes). Nothing here runs a node: package engine does.
package graph
