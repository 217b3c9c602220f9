// Package kubernetes implements sink "kubernetes": it keeps Kubernetes
// objects built from records equal to what the records say, with
// server-side apply, and prunes the objects it labelled that no record
// wants any more. Plan asks the API server itself (dryRun=All) what each
// write would change.
//
// It is not the source of Kubernetes objects (sources/kubernetes watches
// them), nor the place of the client set-up shared with it
// (internal/kubeclient).
package kubernetes
