//go:build integration

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/sys/unix"

	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/kubeapitest"
	"github.com/pipeline/pipeline/schema"
	"github.com/pipeline/pipeline/sinks/ebpfmap"
	"github.com/pipeline/pipeline/sources/kubernetes"
	"github.com/pipeline/pipeline/sources/static"
	"github.com/pipeline/pipeline/transforms/debounce"
	"github.com/pipeline/pipeline/transforms/extract"
	"github.com/pipeline/pipeline/transforms/graceperiod"
)

var srv *kubeapitest.Server

func TestMain(m *testing.M) { os.Exit(kubeapitest.Main(m, &srv)) }

func registry() *node.Registry {
	return node.NewRegistry(kubernetes.Spec(), static.Spec(), extract.Spec(), debounce.Spec(), graceperiod.Spec(), ebpfmap.Spec())
}

// requireRoot checks up front what the eBPF tests need, root and a bpffs
// at /sys/fs/bpf, so that a missing one is named instead of showing up as a
// graph that never gets ready. It fails in CI (which runs as root, with
// the bpffs mounted by make test) and skips elsewhere.
func requireRoot(t *testing.T) {
	t.Helper()
	var miss string
	switch {
	case os.Geteuid() != 0:
		miss = "not root: the eBPF tests need root (CAP_BPF, CAP_NET_ADMIN)"
	case !bpffsMounted("/sys/fs/bpf"):
		miss = "no bpffs at /sys/fs/bpf: mount -t bpf bpf /sys/fs/bpf (make test does it as root)"
	default:
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("end-to-end eBPF test cannot run in CI: %s", miss)
	}
	t.Skipf("skipping: %s", miss)
}

// bpffsMounted reports whether dir is the root of a mounted bpffs.
func bpffsMounted(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.BPF_FS_MAGIC
}

func pinDir(t *testing.T) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	dir := "/sys/fs/bpf/pipeline-e2e-" + hex.EncodeToString(b)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// running is a graph run by the engine in the background.
type running struct {
	rt   *engine.Runtime
	met  *engine.Metrics
	reg  *prometheus.Registry
	stop func()
}

func start(t *testing.T, src string) *running {
	t.Helper()
	return startWith(t, src, registry())
}

// startWith runs src with the node types of reg.
func startWith(t *testing.T, src string, reg *node.Registry) *running {
	t.Helper()
	cfg, diags := schema.NewLoader().ParseSource(t.TempDir()+"/e2e.hcl", []byte(src), schema.Options{Environ: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	g, diags := graph.Compile(cfg, reg)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	r := &running{reg: prometheus.NewRegistry()}
	r.met = engine.NewMetrics(r.reg, "e2e")
	rt, err := engine.NewRuntime(g, engine.RunOptions{Metrics: r.met})
	if err != nil {
		t.Fatal(err)
	}
	r.rt = rt
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = rt.Run(ctx); close(done) }()
	r.stop = func() { cancel(); <-done }
	t.Cleanup(r.stop)
	return r
}

func (r *running) waitReady(t *testing.T) {
	t.Helper()
	eventually(t, 30*time.Second, "graph ready", func() bool { return r.rt.Readiness().Ready })
}

// writes returns the sink's ok writes: upserts and deletes.
func (r *running) writes(sink string) (ups, dels float64) { return r.writeResults(sink, "ok") }

// writeResults returns the sink's writes with result ("ok", "error").
func (r *running) writeResults(sink, result string) (ups, dels float64) {
	g := prometheus.Gatherers{r.reg}
	mfs, _ := g.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "pipeline_sink_writes_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["node"] != sink || labels["result"] != result {
				continue
			}
			if labels["op"] == "upsert" {
				ups = m.GetCounter().GetValue()
			} else {
				dels = m.GetCounter().GetValue()
			}
		}
	}
	return ups, dels
}

func (r *running) metric(t *testing.T, name, node string) float64 {
	t.Helper()
	n, err := testutil.GatherAndCount(r.reg, name)
	if err != nil || n == 0 {
		t.Fatalf("metric %s: %v (count %d)", name, err, n)
	}
	mfs, _ := r.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "node" && l.GetValue() == node {
						return m.GetCounter().GetValue()
					}
				}
			}
		}
	}
	return 0
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func kubeconfig(t *testing.T) string {
	t.Helper()
	p := t.TempDir() + "/kubeconfig"
	if err := srv.WriteKubeconfig(p, "e2e"); err != nil {
		t.Fatal(err)
	}
	return p
}

func hclString(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }
