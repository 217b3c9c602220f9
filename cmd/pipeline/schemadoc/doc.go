// Package schemadoc describes the configuration language from its
// declarations: the top-level blocks (schema), every node type of a
// registry (engine/node) and config test files (configtest). Its views
// are `pipeline schema` as text and as JSON for tools (Doc, a versioned
// contract: docs/editors.md) and docs/reference.md (WriteMarkdown).
//
// It declares nothing itself: an attribute missing from the docs is
// missing from its declaration. The language server reads the same
// declarations directly (cmd/pipeline/lsp).
package schemadoc
