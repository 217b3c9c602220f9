package kubernetes

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/pipeline/pipeline/internal/kubeclient"
	"github.com/pipeline/pipeline/schema"
)

const goodToken = "t0ken-that-must-never-leak"

// fakeAPIServer answers /version and SelfSubjectReviews for goodToken and
// 401 for anything else, like kube-apiserver with token authentication.
func fakeAPIServer(t *testing.T) *httptest.Server {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer "+goodToken {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`)
			return
		}
		switch r.URL.Path {
		case "/version":
			fmt.Fprint(w, `{"major":"1","minor":"37","gitVersion":"v1.37.2"}`)
		case "/apis/authentication.k8s.io/v1/selfsubjectreviews":
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, `{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1","status":{"userInfo":{"username":"alice"}}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // rejected handshakes are the point
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func caPEM(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// otherCA returns a self-signed CA that did not sign the test server's certificate.
func otherCA(t *testing.T) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func closedAddress(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestCheckConnectionPhases(t *testing.T) {
	srv := fakeAPIServer(t)
	tests := []struct {
		name    string
		cluster schema.Cluster
		phase   Phase // "" = success
	}{
		{name: "ok", cluster: schema.Cluster{Endpoint: srv.URL, CACert: caPEM(srv), Token: goodToken}},
		{name: "garbage CA", cluster: schema.Cluster{Endpoint: srv.URL, CACert: []byte("-----BEGIN CERTIFICATE-----\nbm9wZQ==\n-----END CERTIFICATE-----\n"), Token: goodToken},
			phase: PhaseCertificate},
		{name: "wrong CA", cluster: schema.Cluster{Endpoint: srv.URL, CACert: otherCA(t), Token: goodToken}, phase: PhaseCertificate},
		{name: "no CA", cluster: schema.Cluster{Endpoint: srv.URL, Token: goodToken}, phase: PhaseCertificate},
		{name: "closed port", cluster: schema.Cluster{Endpoint: "https://" + closedAddress(t), CACert: caPEM(srv), Token: goodToken},
			phase: PhaseReachability},
		{name: "bogus token", cluster: schema.Cluster{Endpoint: srv.URL, CACert: caPEM(srv), Token: "bogus-" + goodToken},
			phase: PhaseAuthentication},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cluster.QPS, tt.cluster.Burst = 50, 100
			cfg, err := kubeclient.RESTConfig(&tt.cluster)
			if err != nil {
				t.Fatal(err)
			}
			conn, err := newConnection(cfg)
			user := ""
			if err == nil {
				defer conn.close()
				user, err = checkConnection(context.Background(), conn)
			}
			if tt.phase == "" {
				if err != nil || user != "alice" {
					t.Fatalf("user %q, err %v", user, err)
				}
				return
			}
			var ce *ConnectError
			if !errors.As(err, &ce) || ce.Phase != tt.phase {
				t.Fatalf("err = %v, want phase %s", err, tt.phase)
			}
			if !strings.Contains(err.Error(), string(tt.phase)) || strings.Contains(err.Error(), goodToken) {
				t.Errorf("error text %q must name the phase and not hold the token", err)
			}
		})
	}
}

func TestRestConfig(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://a.example:6443"}
- name: b
  cluster: {server: "https://b.example:6443"}
users:
- name: u
  user: {token: xyz}
contexts:
- name: ctx-a
  context: {cluster: a, user: u}
- name: ctx-b
  context: {cluster: b, user: u}
current-context: ctx-a
`
	if err := os.WriteFile(kc, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBECONFIG", kc)
	tests := []struct {
		name    string
		cluster *schema.Cluster
		host    string
		qps     float32
		burst   int
	}{
		{name: "default kubeconfig", cluster: nil, host: "https://a.example:6443", qps: 50, burst: 100},
		{name: "kubeconfig context", cluster: &schema.Cluster{Kubeconfig: kc, Context: "ctx-b", QPS: 5, Burst: 9}, host: "https://b.example:6443", qps: 5, burst: 9},
		{name: "endpoint", cluster: &schema.Cluster{Endpoint: "https://10.0.0.1:6443", TokenFile: "/tok", QPS: 1, Burst: 2}, host: "https://10.0.0.1:6443", qps: 1, burst: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := kubeclient.RESTConfig(tt.cluster)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != tt.host || cfg.QPS != tt.qps || cfg.Burst != tt.burst {
				t.Errorf("host %s qps %v burst %d", cfg.Host, cfg.QPS, cfg.Burst)
			}
		})
	}
	if _, err := kubeclient.RESTConfig(&schema.Cluster{Kubeconfig: kc, Context: "nope"}); err == nil {
		t.Error("unknown context accepted")
	}
	if _, err := kubeclient.RESTConfig(&schema.Cluster{InCluster: true}); err == nil {
		t.Error("in_cluster outside a pod accepted")
	}
}

// TestNoCredentials: when no credentials can exist, CheckCredentials says
// so before anything runs, naming what was looked for; a kubeconfig that
// exists is not its business (Run checks the rest).
func TestNoCredentials(t *testing.T) {
	home := t.TempDir()
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	tests := []struct {
		name    string
		cluster *schema.Cluster
		want    string // "" when credentials may exist
	}{
		// client-go reads the home directory once, at start: ~/.kube/config is clientcmd.RecommendedHomeFile.
		{"no cluster block, nothing found", nil, "looked for $KUBECONFIG (unset), then " + clientcmd.RecommendedHomeFile + ", and for a pod's service account"},
		{"kubeconfig file missing", &schema.Cluster{Name: "c", Kubeconfig: filepath.Join(home, "nope")}, `cluster "c" names the kubeconfig ` + filepath.Join(home, "nope") + ", which does not exist"},
		{"in_cluster outside a pod", &schema.Cluster{Name: "c", InCluster: true}, `cluster "c" sets in_cluster = true, but this process does not run in a pod`},
		{"endpoint", &schema.Cluster{Name: "c", Endpoint: "https://127.0.0.1:1", Token: "t"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := os.Stat(clientcmd.RecommendedHomeFile); tt.cluster == nil && err == nil {
				// client-go fixed the home file at start; a developer's own
				// kubeconfig makes credentials exist. CI has none: there the
				// case must run.
				if os.Getenv("CI") != "" {
					t.Fatalf("%s exists on the CI machine; this case needs it absent", clientcmd.RecommendedHomeFile)
				}
				t.Skipf("%s exists on this machine", clientcmd.RecommendedHomeFile)
			}
			err := (&Source{address: "source.kubernetes.pods", cluster: tt.cluster}).CheckCredentials()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("CheckCredentials: %v", err)
			case tt.want != "" && (!errors.Is(err, kubeclient.ErrNoCredentials) || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("CheckCredentials = %v, want kubeclient.ErrNoCredentials naming %q", err, tt.want)
			}
		})
	}
}
