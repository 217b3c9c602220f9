// Package e2e holds end-to-end tests that cross rooms: whole graphs compiled
// from HCL and run by the engine against real parts — a kube-apiserver built
// from Go modules, pinned BPF maps in the kernel, and an XDP program that
// enforces the allow-list between two network namespaces. It has no
// non-test code; it sits outside engine/ and the node folders so those keep
// their import rules. Run with -tags integration as root (make test does).
package e2e
