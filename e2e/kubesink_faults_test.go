//go:build integration

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/internal/kubeapitest"
)

// faultProxy stands between the pipeline and the real API server and
// answers the requests that match with a fault instead of forwarding
// them: 429 Too Many Requests (with Retry-After, as API priority and
// fairness answers) or 503. down answers every request with 503 and
// breaks the requests in flight (watches), as an API server going away.
type faultProxy struct {
	srv *httptest.Server

	mu       sync.Mutex
	status   int                        // 0: forward
	match    func(r *http.Request) bool // which requests get status
	down     bool
	inFlight map[*http.Request]context.CancelFunc
	hits     []hit // the requests that got a fault
}

type hit struct {
	at           time.Time
	method, path string
	status       int
}

func newFaultProxy(t *testing.T) *faultProxy {
	t.Helper()
	cfg := srv.RESTConfig()
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{inFlight: map[*http.Request]context.CancelFunc{}}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport:     rt,
		FlushInterval: -1, // watches stream
		ErrorHandler:  func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) },
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if status := p.fault(r); status != 0 {
			w.Header().Set("Content-Type", "application/json")
			if status == http.StatusTooManyRequests {
				// client-go waits as asked and retries (10 times) before
				// the sink sees the error.
				w.Header().Set("Retry-After", "0")
			}
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected by the test","reason":%q,"code":%d}`,
				map[int]string{429: "TooManyRequests", 503: "ServiceUnavailable"}[status], status)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		r = r.WithContext(ctx)
		p.mu.Lock()
		p.inFlight[r] = cancel
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			delete(p.inFlight, r)
			p.mu.Unlock()
			cancel()
		}()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// fault is the status r gets, 0 to forward it; it logs the faults.
func (p *faultProxy) fault(r *http.Request) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	status := p.status
	switch {
	case p.down:
		status = http.StatusServiceUnavailable
	case status == 0 || !p.match(r):
		return 0
	}
	p.hits = append(p.hits, hit{at: time.Now(), method: r.Method, path: r.URL.Path, status: status})
	return status
}

// inject answers the requests match selects with status (0: none).
func (p *faultProxy) inject(status int, match func(r *http.Request) bool) {
	p.mu.Lock()
	p.status, p.match = status, match
	p.mu.Unlock()
}

// setDown takes the API server away (every request 503, watches broken)
// or brings it back.
func (p *faultProxy) setDown(down bool) {
	p.mu.Lock()
	p.down = down
	if down {
		for _, cancel := range p.inFlight {
			cancel()
		}
	}
	p.mu.Unlock()
}

// faults returns the faulted requests of method whose path ends with
// suffix.
func (p *faultProxy) faults(method, suffix string) []hit {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []hit
	for _, h := range p.hits {
		if h.method == method && strings.HasSuffix(h.path, suffix) {
			out = append(out, h)
		}
	}
	return out
}

// kubeconfig writes a kubeconfig that reaches the API server through p.
func (p *faultProxy) kubeconfig(t *testing.T) string {
	t.Helper()
	path := t.TempDir() + "/kubeconfig"
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: proxy
  cluster:
    server: %s
users:
- name: proxy
  user: {}
contexts:
- name: proxy
  context:
    cluster: proxy
    user: proxy
current-context: proxy
`, p.srv.URL)
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sinkStatus is the sink's entry of /readyz.
func sinkStatus(r *running, addr string) engine.NodeStatus {
	for _, n := range r.rt.Readiness().Nodes {
		if n.Address == addr {
			return n
		}
	}
	return engine.NodeStatus{}
}

// policies lists the namespaces holding a NetworkPolicy the sink owns.
func policies(t *testing.T, owner string) []string {
	t.Helper()
	_, dyn := clients(t)
	l, err := dyn.Resource(netpolGVR).List(context.Background(), metav1.ListOptions{LabelSelector: "pipeline.io/owner=" + owner})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range l.Items {
		if o.GetDeletionTimestamp() == nil {
			out = append(out, o.GetNamespace())
		}
	}
	sort.Strings(out)
	return out
}

// policyPath is the path of the sink's NetworkPolicy in ns.
func policyPath(ns string) string { return "/namespaces/" + ns + "/networkpolicies/default-deny" }

func sorted(xs ...string) []string {
	out := append([]string(nil), xs...)
	sort.Strings(out)
	return out
}

func sameList(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

// TestKubeSinkServerFaults puts a proxy that answers 429 and 503 between
// the pipeline and the real API server. While the sink's writes get 429
// (client-go retries as the answer asks, then the sink loop) or 503 (the
// sink loop retries with growing backoff), the sink is Degraded in
// /readyz, explain shows the failing apply with the server's message and
// the failed writes are counted; when the answers stop it recovers to
// exactly the wanted objects.
func TestKubeSinkServerFaults(t *testing.T) {
	cs, _ := clients(t)
	a, b, c, d := kubeapitest.NewNamespace(t, cs), kubeapitest.NewNamespace(t, cs), kubeapitest.NewNamespace(t, cs), kubeapitest.NewNamespace(t, cs)
	// resync is long: every write attempt below comes from the backoff.
	p, r, marker, owner := startFaultSink(t, cs, "1h", a, b)
	eventually(t, 30*time.Second, "policies in a and b", func() bool { return sameList(policies(t, owner), sorted(a, b)) })

	// 429 on the sink's writes: client-go retries each request as
	// Retry-After asks, then the sink loop takes over.
	policyWrites := func(r *http.Request) bool {
		return strings.Contains(r.URL.Path, "/networkpolicies/") && (r.Method == http.MethodPatch || r.Method == http.MethodDelete)
	}
	p.inject(http.StatusTooManyRequests, policyWrites)
	labelNamespace(t, cs, c, map[string]any{"netpol": "default-deny", "e2e": marker})
	cKey := c + "/default-deny"
	eventually(t, 30*time.Second, "sink degraded by 429", func() bool {
		st := sinkStatus(r, faultAddr)
		return st.State == "degraded" && !st.Ready && strings.Contains(st.Detail, cKey)
	})
	if n := len(p.faults(http.MethodPatch, policyPath(c))); n < 11 {
		t.Errorf("%d requests answered 429, want at least 11 (client-go's 10 retries after the first)", n)
	}
	ex := r.rt.Explain(context.Background(), cKey)
	if len(ex.Entries) != 1 || ex.Entries[0].Status != "wanted, not in the target" || ex.Entries[0].Attempts < 1 ||
		!strings.Contains(strings.Join(ex.Entries[0].Detail, "\n"), "last apply: failed") ||
		!strings.Contains(ex.Entries[0].LastError, "injected by the test") {
		t.Errorf("explain %s while 429: %+v", c, ex.Entries)
	}
	if ups, _ := r.writeResults(faultAddr, "error"); ups < 1 {
		t.Error("pipeline_sink_writes_total{result=error} = 0 while writes fail")
	}
	p.inject(0, nil)
	eventually(t, 30*time.Second, "recovered from 429", func() bool {
		return sinkStatus(r, faultAddr).State == "healthy" && sameList(policies(t, owner), sorted(a, b, c))
	})

	// 503 on the sink's writes: one request per attempt, each after a
	// longer wait (a step of 100 ms, doubling, jittered within its upper
	// half).
	p.inject(http.StatusServiceUnavailable, policyWrites)
	labelNamespace(t, cs, b, map[string]any{"netpol": nil})
	labelNamespace(t, cs, d, map[string]any{"netpol": "default-deny", "e2e": marker})
	eventually(t, 30*time.Second, "five attempts at d", func() bool { return len(p.faults(http.MethodPatch, policyPath(d))) >= 5 })
	st := sinkStatus(r, faultAddr)
	if st.State != "degraded" || !strings.Contains(st.Detail, "retrying with backoff") {
		t.Errorf("readyz while 503: %+v", st)
	}
	tries := p.faults(http.MethodPatch, policyPath(d))
	for i := 1; i < 5; i++ {
		gap, least := tries[i].at.Sub(tries[i-1].at), 50*time.Millisecond<<(i-1)
		if gap < least {
			t.Errorf("attempt %d came %s after the one before, want at least %s (backoff)", i+1, gap, least)
		}
	}
	if got := policies(t, owner); !sameList(got, sorted(a, b, c)) {
		t.Errorf("policies in %v while every write fails, want %v as before", got, sorted(a, b, c))
	}
	p.inject(0, nil)
	eventually(t, 30*time.Second, "recovered from 503", func() bool {
		return sinkStatus(r, faultAddr).State == "healthy" && sameList(policies(t, owner), sorted(a, c, d))
	})
}

const faultAddr = "sink.kubernetes.netpol"

// startFaultSink runs a NetworkPolicy per namespace labelled
// netpol=default-deny and e2e=marker (labels the namespaces given),
// source and sink through a fault proxy.
func startFaultSink(t *testing.T, cs clientset.Interface, resync string, namespaces ...string) (p *faultProxy, r *running, marker, owner string) {
	t.Helper()
	marker = namespaces[0][len(namespaces[0])-6:] // the namespace's random token
	owner = "faults." + marker
	for _, ns := range namespaces {
		labelNamespace(t, cs, ns, map[string]any{"netpol": "default-deny", "e2e": marker})
	}
	p = newFaultProxy(t)
	r = startKubeSink(t, fmt.Sprintf(`
cluster "k" {
  kubeconfig = %s
}
source "kubernetes" "ns" {
  cluster  = cluster.k
  resource = "namespaces"
  selector = "netpol=default-deny,e2e=%s"
}
sink "kubernetes" "netpol" {
  input       = source.kubernetes.ns
  cluster     = cluster.k
  resync      = %q
  owner_value = %q
  object = {
    apiVersion = "networking.k8s.io/v1"
    kind       = "NetworkPolicy"
    metadata   = { name = "default-deny", namespace = record.value.metadata.name }
    spec       = { podSelector = {}, policyTypes = ["Ingress"] }
  }
}
`, hclString(p.kubeconfig(t)), marker, resync, owner))
	r.waitReady(t)
	return p, r, marker, owner
}

// TestKubeSinkServerAway takes the API server away (every request 503, the
// watches broken) while a namespace loses its label and another gains it:
// the sink is Degraded (its full reconcile cannot list), and when the
// server returns it deletes exactly the one unwanted object and creates
// the new one, nothing else.
func TestKubeSinkServerAway(t *testing.T) {
	cs, _ := clients(t)
	a, b, c := kubeapitest.NewNamespace(t, cs), kubeapitest.NewNamespace(t, cs), kubeapitest.NewNamespace(t, cs)
	p, r, marker, owner := startFaultSink(t, cs, "1s", a, b)
	eventually(t, 30*time.Second, "policies in a and b", func() bool { return sameList(policies(t, owner), sorted(a, b)) })
	_, delsBefore := r.writes(faultAddr)

	p.setDown(true)
	labelNamespace(t, cs, a, map[string]any{"netpol": nil})
	labelNamespace(t, cs, c, map[string]any{"netpol": "default-deny", "e2e": marker})
	eventually(t, 30*time.Second, "sink degraded, not ready", func() bool {
		st := sinkStatus(r, faultAddr)
		return st.State == "degraded" && strings.Contains(st.Detail, "read target") && !r.rt.Readiness().Ready
	})
	if len(p.faults(http.MethodGet, "/networkpolicies")) == 0 {
		t.Error("no LIST of the sink's objects reached the proxy while the server was away")
	}
	if got := policies(t, owner); !sameList(got, sorted(a, b)) {
		t.Errorf("policies in %v while the server is away, want %v", got, sorted(a, b))
	}

	p.setDown(false)
	deleted := func() float64 { _, dels := r.writes(faultAddr); return dels - delsBefore }
	eventually(t, 60*time.Second, "ready with b and c, a's policy deleted", func() bool {
		return r.rt.Readiness().Ready && sameList(policies(t, owner), sorted(b, c)) && deleted() >= 1
	})
	fulls := reconciles(r, faultAddr)
	eventually(t, 30*time.Second, "two more resyncs", func() bool { return reconciles(r, faultAddr) >= fulls+2 })
	if n, got := deleted(), policies(t, owner); n != 1 || !sameList(got, sorted(b, c)) {
		t.Errorf("after the server returned: %v deletes, want exactly 1 (a's policy); policies in %v, want %v", n, got, sorted(b, c))
	}
}
