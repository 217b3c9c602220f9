// Package view holds what the human and JSON views of the commands share:
// the one escaper of text from elsewhere (Printable), coloured terminal
// text (TermText), diagnostics for people and as `validate -json`
// (WriteDiagsText, ValidateJSON), and values as JSON data with secrets
// masked (PlainValue).
//
// It renders; it neither loads configurations nor talks to a running
// instance (the commands in cmd/pipeline do), and the admin API's own
// JSON lives with its handlers.
package view
