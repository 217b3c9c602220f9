// Package kubeapi is a nested module whose only job is building the real
// kube-apiserver and etcd binaries from Go modules (build.sh), so the 31
// k8s.io replace lines of k8s.io/kubernetes never touch the main module's
// dependencies. Tests and the demo run those binaries through
// internal/kubeapitest.
package kubeapi
