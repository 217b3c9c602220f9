// Package files implements source "files": Kubernetes objects read from
// YAML (multi-document) and JSON manifest files matched by glob patterns,
// or, with format, plain data items (JSON, JSON Lines, YAML, CSV, text
// lines) keyed by an expression, re-read whenever the files change. It
// serves GitOps checkouts, objects mounted from ConfigMaps, allow-lists and
// inventories kept in files, and running the examples without a cluster.
//
// The package owns finding, reading, parsing and watching the files.
// Selector, index_by and ignore_fields semantics are those of source
// "kubernetes" and live in internal/kobject; live objects from an API
// server are source "kubernetes"; fixed records written in HCL are source
// "static".
package files
