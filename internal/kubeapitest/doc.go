// Package kubeapitest runs a real kube-apiserver and etcd as child processes,
// from the binaries that test/kubeapi builds from Go modules (cached under
// .cache/kube/<version>, or $PIPELINE_KUBE_ASSETS). It is for tests and the
// demo only: TLS with a generated CA, token authentication (an admin token
// in system:masters and an unprivileged one), RBAC, and a restart of the API
// server on the same port over the same etcd data. Fake clientsets are for
// pure unit tests; everything that talks to Kubernetes is tested here.
package kubeapitest
