// Package view holds what the human and JSON views of the commands share:
// the one escaper of text from elsewhere (Printable), coloured terminal
// text (TermText), diagnostics for people and as `validate -json`
// (WriteDiagsText, ValidateJSON), values as JSON data with secrets
// masked (PlainValue), whether a writer is a colour terminal (Colourful)
// and counted nouns (Plural).
//
// It renders; it neither loads configurations nor talks to a running
// instance (the commands in cmd/pipeline and cmd/pipeline/inspect do).
// The views of one command live with it: the plan's in
// cmd/pipeline/planview, explain's, tap's and top's in
// cmd/pipeline/inspect, config tests' in cmd/pipeline/configtest, the
// admin API's JSON with its handlers in cmd/pipeline/admin.
package view
