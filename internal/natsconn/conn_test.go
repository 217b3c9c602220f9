package natsconn

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/pipeline/pipeline/internal/natstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// statuses records reports.
type statuses struct {
	mu  sync.Mutex
	all []Status
}

func (s *statuses) report(st Status, _ string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = append(s.all, st)
}

func (s *statuses) last() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.all) == 0 {
		return Connecting
	}
	return s.all[len(s.all)-1]
}

func (s *statuses) seen(want Status) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.all {
		if st == want {
			return true
		}
	}
	return false
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func config(url string) Config {
	return Config{URLs: []string{url}, ConnectTimeout: time.Second, ReconnectWait: 20 * time.Millisecond,
		MaxReconnects: -1, ReconnectBuffer: 1 << 20}
}

// TestClosedConnectionIsDialledAgain makes the client give up (one
// reconnect attempt while the server is down) and checks that Conn reports
// it, dials a new connection and is connected again once the server is back.
func TestClosedConnectionIsDialledAgain(t *testing.T) {
	srv := natstest.Embedded(t)
	cfg := config(srv.URL())
	cfg.MaxReconnects = 1
	var st statuses
	reg := prometheus.NewRegistry()
	c, err := Dial(cfg, Options{Name: "test", Report: st.report, Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitFor(t, "connected", func() bool { return st.last() == Connected })
	first := c.NC()
	srv.Stop()
	waitFor(t, "closed", func() bool { return st.seen(Closed) })
	if got := testutil.ToFloat64(c.connected); got != 0 {
		t.Errorf("pipeline_node_nats_connected = %v while closed", got)
	}
	srv.Restart(0)
	waitFor(t, "connected again", func() bool { return st.last() == Connected && c.NC() != first })
	if got := testutil.ToFloat64(c.connected); got != 1 {
		t.Errorf("pipeline_node_nats_connected = %v after the re-dial", got)
	}
	select {
	case <-c.Changed():
	default:
		t.Error("Changed did not fire for the new connection")
	}
}

// TestSecretsNeverLogged connects with a wrong token, a wrong password and a
// password in the URL, then with the right token, and greps the logs.
func TestSecretsNeverLogged(t *testing.T) {
	srv := natstest.Embedded(t)
	srv.Stop()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: srv.Port, Authorization: "right-token-42", NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	if !ns.ReadyForConnections(5 * time.Second) {
		t.Fatal("server not ready")
	}
	var logs bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for _, cfg := range []Config{
		func() Config { c := config(srv.URL()); c.Token = "wrong-token-17"; return c }(),
		func() Config { c := config(srv.URL()); c.User, c.Password = "bob", "pass-word-99"; return c }(),
		config("nats://alice:url-pass-55@127.0.0.1:" + strings.TrimPrefix(srv.URL(), "nats://127.0.0.1:")),
	} {
		var st statuses
		c, err := Dial(cfg, Options{Name: "test", Logger: log, Report: st.report})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond) // several refused attempts
		if st.last() == Connected {
			t.Errorf("connected with wrong credentials %s", cfg)
		}
		c.Close()
	}
	cfg := config(srv.URL())
	cfg.Token = "right-token-42"
	var st statuses
	c, err := Dial(cfg, Options{Name: "test", Logger: log, Report: st.report})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "connected with the right token", func() bool { return st.last() == Connected })
	c.Close()
	mu.Lock()
	defer mu.Unlock()
	for _, secret := range []string{"wrong-token-17", "pass-word-99", "url-pass-55", "right-token-42"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("secret %q in the logs:\n%s", secret, logs.String())
		}
	}
	if !strings.Contains(logs.String(), "nats connected") || !strings.Contains(strings.ToLower(logs.String()), "authorization") {
		t.Errorf("logs hold no connection line:\n%s", logs.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func TestConfigStringRedacts(t *testing.T) {
	c := Config{URLs: []string{"nats://u:secret-1@h:4222"}, Token: "secret-2"}
	if s := c.String(); strings.Contains(s, "secret") {
		t.Fatalf("String() = %q", s)
	}
}
