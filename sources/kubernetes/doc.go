// Package kubernetes implements source "kubernetes": it watches the objects
// of any resource of a Kubernetes API server (custom resources included)
// through a client-go informer over its own lister (or the metadata client,
// with metadata_only) and publishes them as a collection of records keyed
// by namespace/name or by index_by JSONPaths.
//
// The package owns connecting (cluster blocks, connection validation in
// phases), resource resolution through discovery, the informer lifecycle,
// health and the source's metrics; its subpackage wire decodes the
// response bodies. Selector, index_by and ignore_fields
// semantics are shared with source "files" in internal/kobject; turning
// objects into sink records (extract, filter) is the job of transforms.
// See README.md for the configuration.
package kubernetes
