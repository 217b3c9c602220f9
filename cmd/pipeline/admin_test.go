package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipeline/pipeline/cmd/pipeline/admin"
)

// A request that finds admin.MaxRequests in flight is answered 503 at once
// instead of queueing: a thousand concurrent scrapes cost no more memory
// than admin.MaxRequests.
func TestAdminConcurrencyLimit(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, admin.MaxRequests+1)
	blocking := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		started <- struct{}{}
		<-release
	})
	srv := httptest.NewServer(admin.LimitConcurrency(blocking, admin.MaxRequests))
	defer srv.Close()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	defer client.CloseIdleConnections()
	var wg sync.WaitGroup
	for range admin.MaxRequests {
		wg.Go(func() {
			if resp, err := client.Get(srv.URL); err == nil {
				resp.Body.Close()
			}
		})
	}
	for range admin.MaxRequests {
		<-started
	}
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("request over the limit: %s, Retry-After %q", resp.Status, resp.Header.Get("Retry-After"))
	}
	close(release)
	wg.Wait()
	resp, err = client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("after the burst: %s", resp.Status)
	}
}

// The admin server bounds how long a client may hold a connection, and a
// listen error names the address once.
func TestAdminServerSettings(t *testing.T) {
	srv, err := serveHTTP("127.0.0.1:0", nil, nil, nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer shutdownHTTP(srv)
	if srv.ReadHeaderTimeout == 0 || srv.ReadTimeout == 0 || srv.WriteTimeout == 0 || srv.IdleTimeout == 0 || srv.MaxHeaderBytes == 0 {
		t.Errorf("unbounded server: %+v", srv)
	}
	_, err = serveHTTP(srv.Addr, nil, nil, nil, "", nil)
	if err == nil {
		t.Fatal("second listen on one address succeeded")
	}
	if got := err.Error(); strings.Count(got, "listen") != 1 {
		t.Errorf("error %q repeats its prefix", got)
	}
}
