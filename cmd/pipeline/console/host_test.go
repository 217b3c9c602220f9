package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestHostGuard: a request naming a host the endpoint does not serve (a
// DNS-rebinding page's) gets 421 with a text saying what to do; IP
// addresses, localhost, the listen name and allowed names pass.
func TestHostGuard(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "served") })
	for _, tc := range []struct {
		listen  string
		allowed []string
		host    string
		want    int
	}{
		{"127.0.0.1:9464", nil, "127.0.0.1:9464", 200},
		{"127.0.0.1:9464", nil, "127.0.0.1:19464", 200}, // a port-forward's local port
		{"127.0.0.1:9464", nil, "localhost:9464", 200},
		{"127.0.0.1:9464", nil, "LOCALHOST.:9464", 200},
		{"127.0.0.1:9464", nil, "console.localhost", 200},
		{"127.0.0.1:9464", nil, "[::1]:9464", 200},
		{"0.0.0.0:9464", nil, "10.2.3.4:9464", 200}, // Prometheus and probes by pod IP
		{"127.0.0.1:9464", nil, "", 200},
		{"[::]:9464", nil, "[fe80::1%25eth0]:9464", 200},
		{"127.0.0.1:9464", nil, "rebind.attacker.example:9464", 421},
		{"127.0.0.1:9464", nil, "localhost.attacker.example", 421},
		{"127.0.0.1:9464", nil, "127.0.0.1.nip.io:9464", 421},
		{"0.0.0.0:9464", nil, "pipeline.monitoring.svc:9464", 421},
		{"0.0.0.0:9464", []string{"pipeline.monitoring.svc"}, "Pipeline.Monitoring.svc:9464", 200},
		{"0.0.0.0:9464", []string{"proxy.example:443"}, "proxy.example", 200},
		{"myhost:9464", nil, "myhost:9464", 200},
		{"myhost:9464", nil, "otherhost:9464", 421},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/explain?key=x", nil)
		req.Host = tc.host
		HostGuard(ok, tc.listen, tc.allowed).ServeHTTP(rec, req)
		if diff := cmp.Diff(tc.want, rec.Code); diff != "" {
			t.Errorf("listen %s allowed %v, Host %q (-want +got):\n%s", tc.listen, tc.allowed, tc.host, diff)
		}
		if tc.want == 421 && (!strings.Contains(rec.Body.String(), "--allow-host") || strings.Contains(rec.Body.String(), "served")) {
			t.Errorf("Host %q refused with %q", tc.host, rec.Body.String())
		}
	}
}
