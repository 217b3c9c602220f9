// Package kobject holds what the sources of Kubernetes objects share: the
// selector, index_by and ignore_fields attributes (declared once, so source
// "kubernetes" and source "files" read them with the same handles and the
// same diagnostics), label selector decoding, JSONPath index keys (evaluated
// by internal/jpath, which visits a map's keys in sorted order) and field
// pruning, the winner rule for objects that share an index key, the
// object-to-value conversion and the metrics both sources report.
//
// It is not a source: watching the API server lives in sources/kubernetes
// and reading manifest files in sources/files. It imports schema (the
// attribute handles), internal/ctyconv and internal/jpath besides hcl, cty,
// apimachinery and client-go's jsonpath parser; it never imports engine or a
// node package.
package kobject
