// Package lsp is `pipeline lsp`: a Language Server Protocol server over
// stdio for pipeline configurations. Everything it knows comes from the
// same places validate does: diagnostics are validate's own (cmd/pipeline
// injects its loader through Options.Check), completion and hover read
// the node Registry and the schema package's declarations, and formatting
// is `pipeline fmt`'s (Options.Format). Config test files (*.test.hcl)
// are completed and described from their declaration (Options.TestFile)
// and checked as `pipeline test` checks them before running
// (Options.CheckTest), against the addresses of the configuration beside
// them.
//
// It is not a second validator nor a second parser: positions come from
// hcl/v2's ranges (bytes), converted here to LSP's UTF-16 columns, and
// nothing it computes is used outside the editor. The protocol's wire
// types and JSON-RPC connection are go.lsp.dev/protocol and
// go.lsp.dev/jsonrpc2; the framing under them (stream.go) is ours, so that
// a bad or oversized message is answered and skipped instead of ending
// the server.
package lsp
