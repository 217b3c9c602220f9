// Package console is the live web console served at GET / of the admin
// endpoint (`pipeline run --listen`): the compiled graph laid out left to
// right, every node's health, records, rates and queue depth updated each
// second over server-sent events, a node's block as written, its projected
// fields and its metrics over the last minutes.
//
// It only reads: the engine's state through the same calls the admin
// endpoint makes (Readiness, GraphState, the engine's metric registry
// gathered in process), and it serves nothing that changes anything. The
// page reaches explain, tap and the reload history through the admin
// endpoint's own read-only handlers (cmd/pipeline/admin_*.go), which mask
// secrets; this package masks what it serves itself the same way.
//
// The layout is computed here in Go (layout.go) and the page is plain
// HTML, CSS and JavaScript embedded in the binary (assets/), so the console
// needs no network beyond the instance.
package console
