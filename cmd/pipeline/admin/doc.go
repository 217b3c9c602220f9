// Package admin is the admin endpoint of `pipeline run`: the HTTP
// handlers of /metrics, /healthz, /readyz, /reloads, /graph, /explain and
// /tap (Handler), and the JSON they answer with (Explanation, TapLine),
// which the client commands (`pipeline explain`, `tap`, `top`, `plan
// --against`) decode. Every value it serves is masked as logs are.
//
// It serves what the engine's runtime says; it does not listen or manage
// the server's lifetime (the run command does), and the human views of
// what it serves are the commands' (cmd/pipeline/view).
package admin
