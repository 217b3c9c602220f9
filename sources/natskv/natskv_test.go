package natskv

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/internal/natstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// bucket creates a file-backed bucket on srv and returns a client handle
// that reconnects across restarts.
func bucket(t *testing.T, srv *natstest.Server, name string) jetstream.KeyValue {
	t.Helper()
	nc, err := nats.Connect(srv.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	kv, err := js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: name, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// start runs the source until the test ends.
func start(t *testing.T, body string) (*nodetest.Output, *nodetest.HealthRecorder) {
	t.Helper()
	s := nodetest.MustBuild(t, Spec(), body, nil).Source.(*Source)
	env, h := nodetest.Env(t, nil)
	out := nodetest.NewOutput()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, env, out) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return out, h
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

func put(t *testing.T, kv jetstream.KeyValue, key, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := kv.Put(ctx, key, []byte(value)); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

func keysAre(out *nodetest.Output, want ...string) func() bool {
	return func() bool { return slices.Equal(out.Keys(), want) }
}

func TestEmptyBucketSyncs(t *testing.T) {
	srv := natstest.Embedded(t)
	bucket(t, srv, "empty")
	out, _ := start(t, fmt.Sprintf("url = [%q]\nbucket = \"empty\"", srv.URL()))
	waitFor(t, "synced", out.Synced)
	if len(out.Keys()) != 0 {
		t.Fatalf("keys %v", out.Keys())
	}
}

func TestInitialUpdatesDeletes(t *testing.T) {
	srv := natstest.Embedded(t)
	kv := bucket(t, srv, "pods")
	put(t, kv, "v1.10.0.0.1", `{"pod":"a"}`)
	put(t, kv, "v1.fd00=3A=3A1", `{"pod":"b"}`)
	put(t, kv, "other.x", `{"pod":"x"}`)
	put(t, kv, "v1.broken", `{`)
	out, h := start(t, fmt.Sprintf("url = [%q]\nbucket = \"pods\"\nkey_prefix = \"v1.\"", srv.URL()))
	waitFor(t, "synced", out.Synced)
	if diff := cmp.Diff([]string{"10.0.0.1", "fd00::1"}, out.Keys()); diff != "" {
		t.Fatalf("initial keys (-want +got):\n%s", diff)
	}
	if got := out.State()["fd00::1"].GetAttr("pod").AsString(); got != "b" {
		t.Fatalf("value of fd00::1: pod = %q", got)
	}
	put(t, kv, "v1.10.0.0.2", `{"pod":"c"}`)
	if err := kv.Delete(context.Background(), "v1.10.0.0.1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "update and delete", keysAre(out, "10.0.0.2", "fd00::1"))
	if h.State() != node.Healthy {
		t.Fatalf("health %v", h.States())
	}
}

func TestSourceWaitsForBucket(t *testing.T) {
	srv := natstest.Embedded(t)
	out, h := start(t, fmt.Sprintf("url = [%q]\nbucket = \"later\"", srv.URL()))
	time.Sleep(200 * time.Millisecond)
	if out.Synced() || h.State() != node.Pending {
		t.Fatalf("synced %v, health %v before the bucket exists", out.Synced(), h.States())
	}
	kv := bucket(t, srv, "later")
	put(t, kv, "k", `1`)
	waitFor(t, "the bucket's key", keysAre(out, "k"))
}

// restartMidStream checks that the source survives a server restart on the
// same store: it converges on the bucket after the restart, promptly (the
// client library's own watcher recovery takes ~12 s), and never deletes a
// key that was not deleted.
func restartMidStream(t *testing.T, srv *natstest.Server) {
	kv := bucket(t, srv, "pods")
	for i := range 20 {
		put(t, kv, fmt.Sprintf("k%02d", i), fmt.Sprintf(`{"i":%d}`, i))
	}
	out, h := start(t, fmt.Sprintf("url = [%q]\nbucket = \"pods\"\nreconnect_wait = \"50ms\"", srv.URL()))
	waitFor(t, "synced", out.Synced)
	srv.Restart(300 * time.Millisecond)
	put(t, kv, "k20", `{"i":20}`)
	if err := kv.Delete(context.Background(), "k00"); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := 1; i <= 20; i++ {
		want = append(want, fmt.Sprintf("k%02d", i))
	}
	restarted := time.Now()
	waitFor(t, "convergence after the restart", keysAre(out, want...))
	t.Logf("converged %s after the restart", time.Since(restarted))
	for _, b := range out.Batches() {
		for _, d := range b {
			if d.Delete && d.Key != "k00" {
				t.Errorf("spurious delete of %s", d.Key)
			}
		}
	}
	if !slices.Contains(h.States(), node.Degraded) {
		t.Errorf("health never showed the outage: %v", h.States())
	}
	waitFor(t, "healthy again", func() bool { return h.State() == node.Healthy })
}

func TestRestartEmbedded(t *testing.T) { restartMidStream(t, natstest.Embedded(t)) }

// TestNoRequestsWhileWatching checks that a source asks the server
// nothing once its watch runs: the revision lag comes with each delivery,
// so a hub's server does no work per agent and interval. The one bucket
// status request is the bind.
func TestNoRequestsWhileWatching(t *testing.T) {
	srv := natstest.Embedded(t)
	kv := bucket(t, srv, "pods")
	put(t, kv, "v1.10.0.0.1", `{"pod":"a"}`)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	api, err := nc.SubscribeSync("$JS.API.STREAM.INFO.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	s := nodetest.MustBuild(t, Spec(), fmt.Sprintf("url = [%q]\nbucket = \"pods\"\nkey_prefix = \"v1.\"", srv.URL()), nil).Source.(*Source)
	env, _ := nodetest.Env(t, reg)
	out := nodetest.NewOutput()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, env, out) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "synced", out.Synced)
	put(t, kv, "v1.10.0.0.2", `{"pod":"b"}`)
	put(t, kv, "v1.10.0.0.3", `{"pod":"c"}`)
	waitFor(t, "updates", keysAre(out, "10.0.0.1", "10.0.0.2", "10.0.0.3"))
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := api.Pending(); n != 1 {
		t.Fatalf("%d bucket status requests, want 1 (the bind)", n)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP pipeline_source_nats_kv_revision_lag Revisions of the watched keys the server still had to deliver after the last one the source applied.
# TYPE pipeline_source_nats_kv_revision_lag gauge
pipeline_source_nats_kv_revision_lag 0
`), "pipeline_source_nats_kv_revision_lag"); err != nil {
		t.Fatalf("revision lag after the last update: %v", err)
	}
}
