package admin

import "net/http"

// The admin endpoint (/metrics, /healthz, /readyz) must not let a burst of
// clients grow the process: each connection costs buffers and a goroutine,
// and each /metrics scrape gathers every metric family.
// MaxRequests bounds requests being served; further requests get 503
// at once. (Open connections are not capped: with keep-alive, idle clients
// holding the slots would starve the scraper. Server timeouts bound them.)
const MaxRequests = 8

// LimitConcurrency answers 503 (with Retry-After) to a request that finds
// n requests already in flight, instead of queueing it.
func LimitConcurrency(h http.Handler, n int) http.Handler {
	sem := make(chan struct{}, n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
			h.ServeHTTP(w, r)
		default:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many requests in flight", http.StatusServiceUnavailable)
		}
	})
}
