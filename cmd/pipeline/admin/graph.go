package admin

import (
	"encoding/json"
	"net/http"

	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/internal/redact"
)

// graphHandler serves GET /graph: the running graph's nodes with their
// fingerprints (digests only, sensitive parts keyed by a per-process
// secret, and the path of the file holding that secret for a plan run by
// the same user), output sizes and the deletions grace periods hold back
// (keys masked where they hold a secret), what `pipeline plan --against`
// compares a new configuration with. It changes nothing and shows no value.
func graphHandler(rt *engine.Runtime, secrets *redact.Redactor, keyFile string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "read-only: use GET", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		st := rt.GraphState()
		st.FingerprintKeyFile = keyFile
		for i := range st.Nodes {
			for j := range st.Nodes[i].Pending {
				st.Nodes[i].Pending[j].Key = secrets.String(st.Nodes[i].Pending[j].Key)
			}
		}
		_ = json.NewEncoder(w).Encode(st)
	}
}
