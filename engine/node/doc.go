// Package node is the contract between the engine and the node types: the
// Spec each source, transform and sink type declares, the Registry built from
// them, the data model (Record, Delta, Event) and the run-time interfaces
// (Source, Transform, Sink, Target, Output, Input, Env).
//
// Its behaviour is what every node shares and nothing more: the Registry's
// checks, the set of object fields a graph reads (Paths), the wall clock,
// the input-consuming loops (Consume, ConsumeTimed) and the gate wait. The
// engine (package engine) compiles and runs graphs, and each type lives in
// its own package under sources/, transforms/ or sinks/. A node package imports node and schema, never engine
// or another node package.
package node
