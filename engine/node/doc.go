// Package node is the contract between the engine and the node types: the
// Spec each source, transform and sink type declares, the Registry built from
// them, the data model (Record, Delta, Event) and the run-time interfaces
// (Source, Transform, Sink, Target, Output, Input, Env).
//
// It holds no behaviour of its own: the engine (package engine) compiles and
// runs graphs, and each type lives in its own package under sources/,
// transforms/ or sinks/. A node package imports node and schema, never engine
// or another node package.
package node
