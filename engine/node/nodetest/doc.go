// Package nodetest holds fakes and helpers for testing node types in
// isolation: build a node from an HCL snippet, feed it an Input, capture its
// Output, and run the shared Target conformance suite. Only _test.go files
// import it.
package nodetest
