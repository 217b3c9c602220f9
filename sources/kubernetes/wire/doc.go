// Package wire decodes the list and watch responses of one Kubernetes
// resource into JSON-like objects (what unstructured.Unstructured holds):
// whole, or only the paths a projection reads, from JSON or from
// protobuf. Each decoder walks the bytes once, as they arrive, and skips
// what is not read without allocating it.
//
// It is not for requests, retries or informers: source "kubernetes"
// (the parent package) makes the requests and turns the objects into
// records.
package wire
