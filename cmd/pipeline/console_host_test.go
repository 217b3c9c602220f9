package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestAdminRefusesForeignHosts: a running instance answers a request whose
// Host is a name it was not given (a DNS-rebinding page in an operator's
// browser) with 421 on every path, and serves its address and localhost.
func TestAdminRefusesForeignHosts(t *testing.T) {
	dir := t.TempDir()
	addr, stop := startRun(t, dir, strings.Replace(explainConfig, "%s", dir+"/out.log", 1))
	defer stop()
	waitReady(t, http.DefaultClient, "http://"+addr+"/readyz")
	_, port, _ := strings.Cut(addr, ":")
	for _, path := range []string{"/", "/console/graph", "/explain?key=shared", "/graph", "/readyz"} {
		for host, want := range map[string]int{"rebind.attacker.example:" + port: 421, "localhost:" + port: 200, addr: 200} {
			req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
			req.Host = host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("GET %s with Host %s: %s, want %d\n%s", path, host, resp.Status, want, body)
			}
		}
	}
}
