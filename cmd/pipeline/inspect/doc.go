// Package inspect is the client side of a running instance's admin
// endpoint: `pipeline explain` (FetchExplain, WriteExplain), `tap` (Tap)
// and `top` (Top) ask `pipeline run` at its --listen address (AdminURL)
// and show the answer for people, escaped (cmd/pipeline/view), or as the
// server's JSON.
//
// It only reads: the endpoint and the JSON it answers with are
// cmd/pipeline/admin's, and the cobra commands with their flags are
// cmd/pipeline's.
package inspect
