package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/pipeline/pipeline/cmd/pipeline/admin"
	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/internal/redact"
	"github.com/pipeline/pipeline/schema"
	"github.com/pipeline/pipeline/sinks/log"
	"github.com/pipeline/pipeline/sources/static"
)

// reloadDebounce is short so tests run fast; bursts in the tests are
// shorter still.
const reloadDebounce = 100 * time.Millisecond

// staticConfig is a static source and a log sink; n varies the records.
func staticConfig(n int) string {
	return fmt.Sprintf(`
source "static" "nets" {
  records = { "10.0.0.%d/32" = { network = "internal" } }
}
sink "log" "out" {
  input = source.static.nets
  path  = "out.log"
}
`, n)
}

// watched is a pipeline run on a config directory with watching on.
type watched struct {
	addr   string
	client *http.Client
	stderr nodetest.LogBuffer
	cancel context.CancelFunc
	done   chan error
}

func runWatched(t *testing.T, path string) *watched {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &watched{cancel: cancel, done: make(chan error, 1), client: &http.Client{Timeout: 5 * time.Second}}
	addrc := make(chan string, 1)
	go func() {
		w.done <- runPipeline(ctx, io.Discard, &w.stderr, []string{path}, runFlags{listen: "127.0.0.1:0", logFormat: "json",
			logLevel: "info", onListen: func(a string) { addrc <- a },
			reload: reloadFlags{watch: true, debounce: reloadDebounce, timeout: 5 * time.Second}})
	}()
	select {
	case w.addr = <-addrc:
	case err := <-w.done:
		cancel()
		t.Fatalf("run ended early: %v\n%s", err, w.stderr.String())
	}
	t.Cleanup(func() {
		w.cancel()
		if err := <-w.done; err != nil {
			t.Errorf("run: %v", err)
		}
		w.client.CloseIdleConnections()
	})
	waitReady(t, w.client, "http://"+w.addr+"/readyz")
	return w
}

func (w *watched) reloads(t *testing.T) admin.Reloads {
	t.Helper()
	var b admin.Reloads
	if err := json.Unmarshal([]byte(get(t, w.client, "http://"+w.addr+"/reloads")), &b); err != nil {
		t.Fatalf("decode /reloads: %v", err)
	}
	return b
}

// settle waits until the run has made want reloads in all and then stayed
// quiet for three debounce periods, and returns the records.
func (w *watched) settle(t *testing.T, want int) []engine.ReloadRecord {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(w.reloads(t).Reloads) < want && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(3 * reloadDebounce)
	recs := w.reloads(t).Reloads
	if len(recs) != want {
		t.Fatalf("%d reloads, want %d: %+v\n%s", len(recs), want, recs, w.stderr.String())
	}
	return recs
}

func saveFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReloadOnFileSave: each way editors, tools and Kubernetes save a file
// triggers exactly one reload; a save that changes nothing triggers none.
func TestReloadOnFileSave(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "p.hcl")
	saveFile(t, cfg, staticConfig(1))
	w := runWatched(t, dir)
	n := 0
	saves := []struct {
		name   string
		save   func(content string)
		reload bool
	}{
		{"rename over (atomic save)", func(c string) {
			tmp := filepath.Join(dir, ".p.hcl.swp")
			saveFile(t, tmp, c)
			must(t, os.Rename(tmp, cfg))
		}, true},
		{"sed -i (temp file, chmod, rename)", func(c string) {
			tmp := filepath.Join(dir, "sedAb12Cd")
			f, err := os.Create(tmp)
			must(t, err)
			must(t, f.Chmod(0o644))
			_, err = f.WriteString(c)
			must(t, err)
			must(t, f.Close())
			must(t, os.Rename(tmp, cfg))
		}, true},
		{"truncate and write in two parts", func(c string) {
			f, err := os.OpenFile(cfg, os.O_WRONLY|os.O_TRUNC, 0)
			must(t, err)
			_, err = f.WriteString(c[:len(c)/2])
			must(t, err)
			time.Sleep(20 * time.Millisecond)
			_, err = f.WriteString(c[len(c)/2:])
			must(t, err)
			must(t, f.Close())
		}, true},
		{"same content saved again", func(string) {
			b, err := os.ReadFile(cfg)
			must(t, err)
			saveFile(t, cfg, string(b))
		}, false},
		{"chmod only", func(string) { must(t, os.Chmod(cfg, 0o600)) }, false},
		{"file added to the directory", func(string) {
			saveFile(t, filepath.Join(dir, "extra.hcl"), "sink \"log\" \"more\" {\n  input = source.static.nets\n  path  = \"more.log\"\n}\n")
		}, true},
		{"file removed from the directory", func(string) { must(t, os.Remove(filepath.Join(dir, "extra.hcl"))) }, true},
	}
	for i, s := range saves {
		t.Run(s.name, func(t *testing.T) {
			s.save(staticConfig(i + 2))
			if s.reload {
				n++
			}
			recs := w.settle(t, n)
			if s.reload && (recs[0].Result != engine.ReloadApplied || recs[0].Trigger != "file") {
				t.Errorf("latest reload: %+v", recs[0])
			}
		})
	}
	if g := w.reloads(t).Generation; g != uint64(n+1) {
		t.Errorf("generation %d after %d reloads", g, n)
	}
}

// TestReloadConfigMapSwap: a ConfigMap volume update (kubelet's ..data
// symlink swap, which names no configuration file in its events) triggers
// exactly one reload each time.
func TestReloadConfigMapSwap(t *testing.T) {
	dir := t.TempDir()
	update := func(i int) {
		ts := fmt.Sprintf("..2026_11_22_00_00_%02d.000000001", i)
		must(t, os.Mkdir(filepath.Join(dir, ts), 0o755))
		saveFile(t, filepath.Join(dir, ts, "p.hcl"), staticConfig(i))
		old, _ := os.Readlink(filepath.Join(dir, "..data"))
		must(t, os.Symlink(ts, filepath.Join(dir, "..data_tmp")))
		must(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
		if old != "" {
			must(t, os.RemoveAll(filepath.Join(dir, old)))
		}
	}
	update(1)
	must(t, os.Symlink("..data/p.hcl", filepath.Join(dir, "p.hcl")))
	w := runWatched(t, dir)
	for i := 2; i <= 4; i++ {
		update(i)
		recs := w.settle(t, i-1)
		if recs[0].Result != engine.ReloadApplied {
			t.Fatalf("reload %d: %+v", i, recs[0])
		}
	}
}

// TestReloadInvalidKeepsRunning: an invalid save is rejected; the running
// graph keeps serving, and /readyz, /reloads and the metrics say so.
func TestReloadInvalidKeepsRunning(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "p.hcl")
	saveFile(t, cfg, staticConfig(1))
	w := runWatched(t, dir)
	saveFile(t, cfg, strings.Replace(staticConfig(2), "source.static.nets", "source.static.nest", 1))
	recs := w.settle(t, 1)
	if recs[0].Result != engine.ReloadRejected || len(recs[0].Diagnostics) == 0 ||
		!strings.Contains(recs[0].Diagnostics[0], "p.hcl:6:11: Reference to undeclared node") {
		t.Fatalf("reload: %+v", recs[0])
	}
	r := waitReady(t, w.client, "http://"+w.addr+"/readyz")
	if !r.Ready || r.LastReload == nil || r.LastReload.Result != engine.ReloadRejected || r.LastReload.Error == "" {
		t.Errorf("readyz: ready %v, last reload %+v", r.Ready, r.LastReload)
	}
	metrics := get(t, w.client, "http://"+w.addr+"/metrics")
	for _, want := range []string{`pipeline_config_reloads_total{result="rejected"} 1`, "pipeline_config_last_reload_successful 0", "pipeline_config_generation 1"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// The fix applies.
	saveFile(t, cfg, staticConfig(3))
	if recs := w.settle(t, 2); recs[0].Result != engine.ReloadApplied || recs[0].Generation != 2 {
		t.Errorf("fixed reload: %+v", recs[0])
	}
	if resp, err := w.client.Post("http://"+w.addr+"/reloads", "text/plain", nil); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /reloads: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}

// gatedSource syncs only when its gate opens, so a test can hold a reload
// in progress.
type gatedSource struct{ gate, started chan struct{} }

func (s gatedSource) Run(ctx context.Context, _ node.Env, out node.Output) error {
	select {
	case s.started <- struct{}{}:
	default:
	}
	select {
	case <-s.gate:
		out.MarkSynced()
	case <-ctx.Done():
		return nil
	}
	<-ctx.Done()
	return nil
}

// TestSignalWhileStarting: a SIGHUP that arrives before the reloader runs
// (here: once the HTTP server listens) is kept and reloads, instead of
// ending the process as the signal's default action would.
func TestSignalWhileStarting(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "p.hcl")
	saveFile(t, cfg, staticConfig(1))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var logs nodetest.LogBuffer
	go func() {
		done <- runPipeline(ctx, io.Discard, &logs, []string{cfg}, runFlags{listen: "127.0.0.1:0", logFormat: "json",
			logLevel: "info", onListen: func(string) { must(t, syscall.Kill(os.Getpid(), syscall.SIGHUP)) }})
	}()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), `"msg":"reload requested by SIGHUP"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no reload after a SIGHUP sent while starting:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReloadSignalDuringReload: a SIGHUP that arrives while a reload is in
// progress is applied after it, never dropped.
func TestReloadSignalDuringReload(t *testing.T) {
	gate, started := make(chan struct{}), make(chan struct{}, 1)
	gated := node.Spec{Kind: node.KindSource, Type: "gated", Summary: "test", Output: node.Records,
		NewSource: func(node.Build) (node.Source, hcl.Diagnostics) { return gatedSource{gate, started}, nil }}
	reg := node.NewRegistry(static.Spec(), log.Spec(), gated)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "p.hcl")
	saveFile(t, cfg, staticConfig(1))
	l := loadWith([]string{cfg}, schema.Options{}, reg)
	if l.diags.HasErrors() {
		t.Fatal(l.diags.Error())
	}
	var logs nodetest.LogBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	rt, err := engine.NewRuntime(l.graph, engine.RunOptions{Logger: logger, Metrics: engine.NewMetrics(prometheus.NewRegistry(), "test")})
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = rt.Run(ctx); close(done) }()
	rl := newReloader([]string{cfg}, schema.Options{}, reg, rt, l, redact.New(nil), logger, 10*time.Second)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	wait := startReloads(ctx, rl, reloadFlags{}, hup)
	defer func() { cancel(); wait(); <-done }()

	saveFile(t, cfg, staticConfig(2)+"source \"gated\" \"g\" {}\nsink \"log\" \"g\" {\n  input = source.gated.g\n  path = \"g.log\"\n}\n")
	rl.trigger("file", false)
	select {
	case <-started: // the reload is staging the gated source
	case <-time.After(5 * time.Second):
		t.Fatal("the reload did not start the gated source")
	}
	deadline := time.Now().Add(5 * time.Second)
	saveFile(t, cfg, staticConfig(3))
	must(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
	time.Sleep(50 * time.Millisecond) // the signal is taken and waits for the reload
	if n := len(rt.Reloads()); n != 0 {
		t.Fatalf("%d reloads finished while the first was held: %+v", n, rt.Reloads())
	}
	close(gate)
	for len(rt.Reloads()) < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	var got []string
	for _, r := range rt.Reloads() {
		got = append(got, fmt.Sprintf("%s %s %d", r.Trigger, r.Result, r.Generation))
	}
	if want := []string{"file applied 2", "signal applied 3"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("reloads %v, want %v\n%s", got, want, logs.String())
	}
	for _, n := range rt.GraphState().Nodes {
		if n.Address == "source.gated.g" {
			t.Error("the gated source of the first reload still runs after the second")
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestReloadMasksNewSecrets: a secret that only the reloaded configuration
// declares is masked in /reloads, /readyz and the logs, even in the error
// of a part that failed to start.
func TestReloadMasksNewSecrets(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "p.hcl")
	saveFile(t, cfg, staticConfig(1))
	w := runWatched(t, dir)
	const secret = "hunter2-e9f1c7"
	saveFile(t, cfg, staticConfig(1)+fmt.Sprintf(`
variable "where" {
  default   = "/nonexistent-%s/x.log"
  sensitive = true
}
sink "log" "secret" {
  input = source.static.nets
  path  = var.where
}
`, secret))
	recs := w.settle(t, 1)
	if recs[0].Result != engine.ReloadRolledBack {
		t.Fatalf("reload: %+v", recs[0])
	}
	for what, body := range map[string]string{"/reloads": get(t, w.client, "http://"+w.addr+"/reloads"),
		"/readyz": get(t, w.client, "http://"+w.addr+"/readyz"), "logs": w.stderr.String()} {
		if strings.Contains(body, secret) {
			t.Errorf("%s shows the secret: %s", what, body)
		}
	}
	if !strings.Contains(recs[0].Error, "sink.log.secret: open target") {
		t.Errorf("the error does not name the sink that failed: %q", recs[0].Error)
	}
}

// fanInConfig is a log sink over the union of static sources, one per
// network number.
func fanInConfig(nets ...int) string {
	var b strings.Builder
	var refs []string
	for _, n := range nets {
		fmt.Fprintf(&b, "source \"static\" \"n%d\" {\n  records = { \"10.0.0.%d/32\" = { network = \"internal\" } }\n}\n", n, n)
		refs = append(refs, fmt.Sprintf("source.static.n%d", n))
	}
	fmt.Fprintf(&b, "sink \"log\" \"out\" {\n  inputs = [%s]\n  path   = \"out.log\"\n}\n", strings.Join(refs, ", "))
	return b.String()
}

// TestReloadFanIn: a configuration with fan-in reloads like any other; an
// added input reaches the sink through the new union.
func TestReloadFanIn(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "p.hcl")
	saveFile(t, cfg, fanInConfig(1, 2))
	w := runWatched(t, dir)
	saveFile(t, cfg, fanInConfig(1, 2, 3))
	recs := w.settle(t, 1)
	actions := map[string]graph.Action{}
	for _, n := range recs[0].Nodes {
		actions[n.Address] = n.Action
	}
	want := map[string]graph.Action{"source.static.n1": graph.Kept, "source.static.n2": graph.Kept,
		"source.static.n3": graph.Added, "sink.log.out": graph.Rebuilt}
	if recs[0].Result != engine.ReloadApplied {
		t.Fatalf("reload: %s %q", recs[0].Result, recs[0].Error)
	}
	if d := cmp.Diff(want, actions); d != "" {
		t.Errorf("actions (-want +got):\n%s", d)
	}
	eventually(t, "the added input's record in out.log", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "out.log"))
		return bytes.Contains(b, []byte("10.0.0.3/32"))
	})
}

// closedAddr returns a local address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	must(t, l.Close())
	return addr
}

// TestReloadUnreachableNATSRollsBack: a reload adding a NATS sink whose
// server cannot be reached rolls back within the reload timeout, naming the
// sink; the half-open sink is torn down (no goroutine left) and the running
// graph goes on: its sink keeps receiving.
func TestReloadUnreachableNATSRollsBack(t *testing.T) {
	for _, tt := range []struct{ addr, attrs string }{
		{"sink.nats_kv.remote", `bucket = "nets"`},
		{"sink.nats.remote", `subject = "nets"`},
	} {
		t.Run(tt.addr, func(t *testing.T) {
			testReloadUnreachableNATS(t, tt.addr, tt.attrs)
		})
	}
}

func testReloadUnreachableNATS(t *testing.T, addr, attrs string) {
	leakOpts := append([]goleak.Option{goleak.IgnoreCurrent()}, ignoreHTTP...)
	t.Cleanup(func() { goleak.VerifyNone(t, leakOpts...) }) // after the run's cleanup
	dir := t.TempDir()
	cfg := filepath.Join(dir, "p.hcl")
	saveFile(t, cfg, staticConfig(1))
	w := runWatched(t, dir)
	typ := strings.Split(addr, ".")[1]
	saveFile(t, cfg, staticConfig(1)+fmt.Sprintf(`
sink %q "remote" {
  input = source.static.nets
  url   = ["nats://%s"]
  %s
}
`, typ, closedAddr(t), attrs))
	recs := w.settle(t, 1)
	if recs[0].Result != engine.ReloadRolledBack || !strings.Contains(recs[0].Error, addr+": target not ready") ||
		!strings.Contains(recs[0].Error, "connection refused") {
		t.Fatalf("reload: %s %q; want rolled back naming %s and the refused connection", recs[0].Result, recs[0].Error, addr)
	}
	if recs[0].Duration > 7*time.Second {
		t.Errorf("the rollback took %s; the reload timeout is 5s", recs[0].Duration)
	}
	r := waitReady(t, w.client, "http://"+w.addr+"/readyz")
	if !r.Ready || len(r.Nodes) != 2 {
		t.Errorf("after the rollback: ready %v, nodes %+v", r.Ready, r.Nodes)
	}
	// The running graph goes on: a change of the source reaches its sink.
	saveFile(t, cfg, staticConfig(2))
	if recs := w.settle(t, 2); recs[0].Result != engine.ReloadApplied {
		t.Fatalf("reload: %+v", recs[0])
	}
	out := filepath.Join(dir, "out.log")
	eventually(t, "the running sink to receive the new record", func() bool {
		b, _ := os.ReadFile(out)
		return strings.Contains(string(b), "10.0.0.2/32")
	})
}

// TestLeaderChange names what changed in leader_election, by attribute.
func TestLeaderChange(t *testing.T) {
	prod := &schema.Cluster{Name: "prod", Kubeconfig: "/etc/kube/prod"}
	base := schema.LeaderElection{Cluster: prod, Namespace: "pipeline", LeaseName: "hub",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
	with := func(f func(*schema.LeaderElection)) *schema.LeaderElection {
		le := base
		f(&le)
		return &le
	}
	tests := []struct {
		name      string
		cur, next *schema.LeaderElection
		want      string
	}{
		{"none", nil, nil, ""},
		{"same", &base, with(func(*schema.LeaderElection) {}), ""},
		{"added", nil, &base, "a leader_election block was added"},
		{"removed", &base, nil, "the leader_election block was removed"},
		{"timings", &base, with(func(le *schema.LeaderElection) { le.LeaseDuration, le.RetryPeriod = time.Minute, time.Second }),
			"leader_election changed (lease_duration, retry_period)"},
		{"lease", &base, with(func(le *schema.LeaderElection) { le.Namespace, le.LeaseName = "other", "other" }),
			"leader_election changed (namespace, lease_name)"},
		{"other cluster", &base, with(func(le *schema.LeaderElection) { le.Cluster = &schema.Cluster{Name: "dev"} }),
			"leader_election changed (cluster)"},
		{"cluster settings", &base, with(func(le *schema.LeaderElection) {
			le.Cluster = &schema.Cluster{Name: "prod", Kubeconfig: "/etc/kube/other"}
		}), "cluster.prod, which leader_election uses, changed"},
		{"unrelated cluster setting", &base, with(func(le *schema.LeaderElection) {
			le.Cluster = &schema.Cluster{Name: "prod", Kubeconfig: "/etc/kube/prod", QPS: 10}
		}), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := leaderChange(tt.cur, tt.next); got != tt.want {
				t.Errorf("leaderChange = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestReloadLeaderElectionRejected: a reload that changes leader_election
// is rejected with what changed and what to do (restart), and the running
// graph goes on. (A change of a running election's settings is tested on a
// real API server: TestDeployOnKubernetes.)
func TestReloadLeaderElectionRejected(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "p.hcl")
	saveFile(t, cfg, staticConfig(1))
	w := runWatched(t, dir)
	saveFile(t, cfg, staticConfig(2)+"\nleader_election {\n  lease_name = \"hub\"\n}\n")
	recs := w.settle(t, 1)
	const want = "a leader_election block was added: leader election cannot change while the pipeline runs, " +
		"so nothing of this configuration was applied and the running graph goes on with the leader_election it started with; " +
		"restart the pipeline (every instance, for example by rolling the Deployment) to apply it"
	if recs[0].Result != engine.ReloadRejected || recs[0].Error != want || recs[0].Generation != 1 {
		t.Fatalf("reload: %s gen %d %q; want rejected with %q", recs[0].Result, recs[0].Generation, recs[0].Error, want)
	}
	r := waitReady(t, w.client, "http://"+w.addr+"/readyz")
	if !r.Ready || r.LastReload == nil || r.LastReload.Error != want {
		t.Errorf("readyz: ready %v, last reload %+v", r.Ready, r.LastReload)
	}
	if !strings.Contains(w.stderr.String(), "restart the pipeline") {
		t.Errorf("the log does not say to restart:\n%s", w.stderr.String())
	}
	out := filepath.Join(dir, "out.log")
	if b, _ := os.ReadFile(out); strings.Contains(string(b), "10.0.0.2/32") {
		t.Errorf("the rejected configuration reached the sink:\n%s", b)
	}
	// The running graph goes on: the next configuration without the change applies.
	saveFile(t, cfg, staticConfig(3))
	if recs := w.settle(t, 2); recs[0].Result != engine.ReloadApplied || recs[0].Generation != 2 {
		t.Fatalf("reload: %+v", recs[0])
	}
	eventually(t, "the running sink to receive the new record", func() bool {
		b, _ := os.ReadFile(out)
		return strings.Contains(string(b), "10.0.0.3/32")
	})
}
