package admin

import (
	"encoding/json"
	"net/http"

	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/internal/redact"
)

// Reloads is the body of GET /reloads.
type Reloads struct {
	// Generation is the running configuration's generation.
	Generation uint64 `json:"generation"`
	// Reloads are the latest reloads, newest first.
	Reloads []engine.ReloadRecord `json:"reloads"`
}

// reloadsHandler serves GET /reloads: the latest reload records, read-only,
// with every secret masked.
func reloadsHandler(rt *engine.Runtime, secrets *redact.Redactor) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "read-only: use GET", http.StatusMethodNotAllowed)
			return
		}
		recs := rt.Reloads()
		body := Reloads{Generation: rt.Generation(), Reloads: make([]engine.ReloadRecord, 0, len(recs))}
		for i := len(recs) - 1; i >= 0; i-- {
			rec := recs[i]
			rec.Error = secrets.String(rec.Error)
			rec.Diagnostics = append([]string(nil), rec.Diagnostics...)
			for j, d := range rec.Diagnostics {
				rec.Diagnostics[j] = secrets.String(d)
			}
			rec.Warnings = append([]string(nil), rec.Warnings...)
			for j, w := range rec.Warnings {
				rec.Warnings[j] = secrets.String(w)
			}
			body.Reloads = append(body.Reloads, rec)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	})
}
