package main

import (
	"encoding/json"
	"net/http"

	"github.com/pipeline/pipeline/engine"
)

// graphHandler serves GET /graph: the running graph's nodes with their
// fingerprints (digests only, sensitive parts keyed by a per-process
// secret) and output sizes, what `pipeline plan --against` compares a new
// configuration with. It changes nothing and shows no value.
func graphHandler(rt *engine.Runtime) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "read-only: use GET", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rt.GraphState())
	}
}
