package admin

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/internal/redact"
)

// Handler is the admin endpoint of a running pipeline: /metrics,
// /healthz, /readyz, /reloads, /graph (keyFile is where the fingerprint
// key is for it to name), /explain and /tap, with every secret masked and
// at most MaxRequests served at once. page, when not nil, is the web
// console (cmd/pipeline/console): GET / and /console/; its event stream
// is bounded by the console itself, not by the slots every other request
// shares.
func Handler(g prometheus.Gatherer, rt *engine.Runtime, secrets *redact.Redactor, keyFile string, page http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("/reloads", reloadsHandler(rt, secrets))
	mux.Handle("/graph", graphHandler(rt, secrets, keyFile))
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		r := rt.Readiness()
		for i := range r.Nodes {
			r.Nodes[i].Detail = secrets.String(r.Nodes[i].Detail)
		}
		if r.LastReload != nil {
			r.LastReload.Error = secrets.String(r.LastReload.Error)
		}
		w.Header().Set("Content-Type", "application/json")
		if !r.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(r)
	})
	mux.Handle("/explain", explainHandler(rt, secrets))
	registerTap(mux, rt, secrets)
	root := LimitConcurrency(mux, MaxRequests)
	if page != nil {
		mux.Handle("GET /{$}", page)
		mux.Handle("GET /console/", page)
		// Open pages follow /console/events for as long as they are open,
		// so the stream is bounded by the console itself, not by the slots
		// every other request shares.
		outer := http.NewServeMux()
		outer.Handle("GET /console/events", page)
		outer.Handle("/", root)
		root = outer
	}
	return root
}
