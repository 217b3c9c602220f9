// Package schema is the pipeline configuration language: it parses HCL files,
// decodes the top-level blocks (variable, locals, cluster, source, transform,
// sink), evaluates variables and locals, and offers typed attribute handles
// (Attr) with which each node type declares and reads its body.
//
// schema knows block shapes and values, not what a node does: it does not know
// which source, transform or sink types exist (engine/node holds the Registry)
// and it does not build the graph (engine compiles it). It imports only hcl,
// cty and the standard library.
package schema
