package console

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
)

// HostGuard answers only requests whose Host header names this endpoint,
// against DNS rebinding: a page on a name its owner points first at
// their server and then at 127.0.0.1 (or at the node's address) runs in
// the operator's browser and would otherwise read everything the endpoint
// serves (explain, tap, the blocks as written, the graph) as its own origin.
// Such a request carries the attacker's name in Host, so Host is checked.
//
// Accepted are: an IP address, whichever (a browser sends one only for a
// page served from that very address, which no name can be rebound to);
// "localhost" and names under .localhost, which browsers resolve to
// loopback themselves; the host of listen when it is a name; and the names
// in allowed (pipeline run --allow-host), compared without case and
// without their port, since a port-forward changes the port. A request
// without Host (HTTP/1.0) comes from no browser and passes. Others get 421
// Misdirected Request with a text that says how to allow the name.
func HostGuard(next http.Handler, listen string, allowed []string) http.Handler {
	names := []string{}
	if host, _, err := net.SplitHostPort(listen); err == nil && host != "" && net.ParseIP(host) == nil {
		names = append(names, strings.ToLower(host))
	}
	for _, a := range allowed {
		names = append(names, strings.TrimSuffix(strings.ToLower(hostOnly(a)), "."))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host == "" || allowedHost(hostOnly(r.Host), names) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusMisdirectedRequest)
		fmt.Fprintf(w, "pipeline: this admin endpoint does not answer for the host %q: it answers for IP addresses, "+
			"localhost and the names given with `pipeline run --allow-host NAME`. Open it by its address "+
			"(http://127.0.0.1:PORT/), or start pipeline with --allow-host for this name.\n", hostOnly(r.Host))
	})
}

// hostOnly is the host of a Host header, without its port or the
// brackets of an IPv6 literal.
func hostOnly(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		return host
	}
	return strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
}

func allowedHost(host string, names []string) bool {
	if _, err := netip.ParseAddr(host); err == nil { // with an IPv6 zone too
		return true
	}
	h := strings.TrimSuffix(strings.ToLower(host), ".") // "localhost." is localhost
	return h == "localhost" || strings.HasSuffix(h, ".localhost") || slices.Contains(names, h)
}
