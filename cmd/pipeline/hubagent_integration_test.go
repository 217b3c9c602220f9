//go:build integration

package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/internal/kubeapitest"
	"github.com/pipeline/pipeline/internal/natstest"
)

// hubOnKube mirrors the pod IPs of one namespace into a NATS bucket.
const hubOnKube = `
cluster "test" {
  kubeconfig = %[1]q
}
source "kubernetes" "pods" {
  cluster   = cluster.test
  resource  = "pods"
  namespace = %[2]q
  selector  = "app=backend"
}
transform "extract" "pod_ips" {
  input    = source.kubernetes.pods
  for_each = try(object.status.podIPs, [])
  key      = each.value.ip
  value    = { pod = object.metadata.name }
}
sink "nats_kv" "pod_ips" {
  input      = transform.extract.pod_ips
  url        = %[3]q
  bucket     = "pod-ips"
  key_prefix = "v1."
}
`

// mapAgent programs a pinned map from the bucket; it has no cluster.
const mapAgent = `
source "nats_kv" "pod_ips" {
  url        = %[1]q
  bucket     = "pod-ips"
  key_prefix = "v1."
}
sink "ebpf_map" "allowed" {
  input = source.nats_kv.pod_ips
  pin   = %[2]q
  key {
    type = "ipv4"
  }
  value {
    type = "u32"
    from = 1
  }
}
`

// logAgent prints the bucket's changes as JSON lines.
const logAgent = `
source "nats_kv" "pod_ips" {
  url        = %[1]q
  bucket     = "pod-ips"
  key_prefix = "v1."
}
sink "log" "allowed" {
  input  = source.nats_kv.pod_ips
  path   = "out.log"
  format = "json"
}
`

// TestHubAndAgentsOnKubernetes runs a hub (kubernetes -> nats_kv) on the
// real API server and two agents (nats_kv -> ebpf_map, nats_kv -> log)
// that never talk to it; all converge on pod add, IP change and delete.
func TestHubAndAgentsOnKubernetes(t *testing.T) {
	pinDir := bpfDir(t)
	srv := startKube(t)
	admin := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ns := kubeapitest.NewNamespace(t, admin)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := srv.WriteKubeconfig(kubeconfig, "test"); err != nil {
		t.Fatal(err)
	}
	natsSrv := natstest.Embedded(t)
	pin := filepath.Join(pinDir, "allowed")

	hub := launch(t, t.TempDir(), fmt.Sprintf(hubOnKube, kubeconfig, ns, natsSrv.URL()))
	defer stopOK(t, hub)
	mapRun := launch(t, t.TempDir(), fmt.Sprintf(mapAgent, natsSrv.URL(), pin))
	defer stopOK(t, mapRun)
	logDir := t.TempDir()
	logRun := launch(t, logDir, fmt.Sprintf(logAgent, natsSrv.URL()))
	defer stopOK(t, logRun)

	converge := func(what string, want ...string) {
		t.Helper()
		slices.Sort(want)
		var gotMap, gotLog []string
		deadline := time.Now().Add(20 * time.Second)
		for {
			gotMap, gotLog = mapKeys(t, pin), logState(t, filepath.Join(logDir, "out.log"))
			if slices.Equal(gotMap, want) && slices.Equal(gotLog, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: agents did not converge on %v: map %v, log %v\nhub:\n%s", what, want, gotMap, gotLog, hub.stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	ctx := context.Background()
	setPod(t, admin, ns, "a", "10.0.0.1")
	setPod(t, admin, ns, "b", "10.0.0.2")
	converge("add", "10.0.0.1", "10.0.0.2")
	setPod(t, admin, ns, "a", "10.0.0.11")
	converge("change", "10.0.0.11", "10.0.0.2")
	if err := admin.CoreV1().Pods(ns).Delete(ctx, "b", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	converge("delete", "10.0.0.11")
}

// TestRestartedAgentWritesNothing fills a bucket with 1,000 keys, lets an
// agent program a pinned map from it, then restarts the agent over the
// unchanged bucket: the second run writes 0 map entries. A third run after
// one entry was deleted from the map by hand writes exactly that one, so
// the count is the one that would show churn.
func TestRestartedAgentWritesNothing(t *testing.T) {
	pin := filepath.Join(bpfDir(t), "allowed")
	const n = 1000
	natsSrv := natstest.Embedded(t)
	var recs strings.Builder
	for i := range n {
		fmt.Fprintf(&recs, "    \"10.1.%d.%d\" = {}\n", i/256, i%256)
	}
	hub := launch(t, t.TempDir(), fmt.Sprintf(`
source "static" "ips" {
  records = {
%s  }
}
sink "nats_kv" "hub" {
  input      = source.static.ips
  url        = %q
  bucket     = "pod-ips"
  key_prefix = "v1."
}
`, recs.String(), natsSrv.URL()))
	defer stopOK(t, hub)
	// An agent started before the hub wrote the whole bucket would sync
	// to whatever part it found and count the rest as writes.
	waitBucket(t, natsSrv.URL(), "pod-ips", n)
	agent := fmt.Sprintf(mapAgent, natsSrv.URL(), pin)
	dir := t.TempDir()

	runAgent := func(what string) (upserts, deletes float64) {
		t.Helper()
		r := launch(t, dir, agent)
		defer stopOK(t, r)
		// A sink is synced in /readyz once it finished a full reconcile of
		// the synced input: whatever that run writes at start is counted
		// by then.
		deadline := time.Now().Add(30 * time.Second)
		for !sinkSynced(t, r.addr, "sink.ebpf_map.allowed") {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the agent never got ready\n%s", what, r.stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		if got := len(mapKeys(t, pin)); got != n {
			t.Fatalf("%s: the map holds %d entries, want %d\n%s", what, got, n, r.stderr.String())
		}
		m := scrape(t, r.addr)
		return m.writes("sink.ebpf_map.allowed", "upsert"), m.writes("sink.ebpf_map.allowed", "delete")
	}
	if up, del := runAgent("first run"); up != n || del != 0 {
		t.Fatalf("first run wrote %v upserts, %v deletes; want %d, 0", up, del, n)
	}
	before := mapKeys(t, pin)
	up, del := runAgent("restart")
	t.Logf("restarted agent over an unchanged bucket of %d keys: %v map upserts, %v deletes", n, up, del)
	if up != 0 || del != 0 {
		t.Errorf("restart over an unchanged bucket wrote %v upserts, %v deletes; want 0", up, del)
	}
	if d := cmp.Diff(before, mapKeys(t, pin)); d != "" {
		t.Errorf("map changed across the restart (-before +after):\n%s", d)
	}
	m, err := ebpf.LoadPinnedMap(pin, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = m.Delete(netip.MustParseAddr("10.1.0.7").As4())
	m.Close()
	if err != nil {
		t.Fatal(err)
	}
	if up, del := runAgent("restart after a map entry was lost"); up != 1 || del != 0 {
		t.Errorf("restart after one entry was lost wrote %v upserts, %v deletes; want 1, 0", up, del)
	}
}

// waitBucket waits until the bucket holds n values.
func waitBucket(t *testing.T, url, bucket string, n int) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	have := uint64(0)
	for ctx.Err() == nil {
		if kv, err := js.KeyValue(ctx, bucket); err == nil {
			if st, err := kv.Status(ctx); err == nil {
				if have = st.Values(); have == uint64(n) {
					return
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("bucket %s holds %d values, want %d", bucket, have, n)
}

// bpfDir returns a fresh directory on the bpffs, removed at the end; it
// skips (fails under CI) when maps cannot be created here.
func bpfDir(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		missingInCI(t, "eBPF test needs root (CAP_BPF) to create BPF maps")
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	dir := "/sys/fs/bpf/pipeline-test-" + hex.EncodeToString(b)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// mapKeys lists the IPv4 keys of the pinned map, sorted; none when the
// map is not pinned yet.
func mapKeys(t *testing.T, pin string) []string {
	t.Helper()
	m, err := ebpf.LoadPinnedMap(pin, nil)
	if err != nil {
		return nil
	}
	defer m.Close()
	var out []string
	var k [4]byte
	var v uint32
	it := m.Iterate()
	for it.Next(&k, &v) {
		out = append(out, netip.AddrFrom4(k).String())
	}
	if err := it.Err(); err != nil {
		t.Fatalf("iterate %s: %v", pin, err)
	}
	slices.Sort(out)
	return out
}

// logState replays a json log sink's lines into the keys it holds, sorted.
func logState(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	keys := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line struct{ Op, Key string }
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue // a line being written
		}
		keys[line.Key] = line.Op == "upsert"
	}
	var out []string
	for k, in := range keys {
		if in {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// setPod creates pod name (labelled app=backend) or, when it exists, sets
// its IP.
func setPod(t *testing.T, cs kubernetes.Interface, ns, name, ip string) {
	t.Helper()
	ctx := context.Background()
	pods := cs.CoreV1().Pods(ns)
	pod, err := pods.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		pod, err = pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "backend"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	pod.Status.PodIP = ip
	pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	if _, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func stopOK(t *testing.T, r *launched) {
	t.Helper()
	if err := r.stop(); err != nil {
		t.Errorf("run: %v\n%s", err, r.stderr.String())
	}
}

// scraped is one /metrics scrape.
type scraped map[string]*family

type family struct {
	series []model.LabelSet
	values []float64
}

func scrape(t *testing.T, addr string) scraped {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	out := scraped{}
	for name, f := range fams {
		d := &family{}
		for _, m := range f.GetMetric() {
			ls := model.LabelSet{}
			for _, l := range m.GetLabel() {
				ls[model.LabelName(l.GetName())] = model.LabelValue(l.GetValue())
			}
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
			d.series, d.values = append(d.series, ls), append(d.values, v)
		}
		out[name] = d
	}
	return out
}

// sum adds the values of name's series whose labels include want.
func (s scraped) sum(name string, want model.LabelSet) float64 {
	d, ok := s[name]
	if !ok {
		return 0
	}
	total := 0.0
	for i, ls := range d.series {
		match := true
		for k, v := range want {
			if ls[k] != v {
				match = false
			}
		}
		if match {
			total += d.values[i]
		}
	}
	return total
}

func (s scraped) writes(node, op string) float64 {
	return s.sum("pipeline_sink_writes_total", model.LabelSet{"node": model.LabelValue(node), "op": model.LabelValue(op)})
}

// sinkSynced says whether /readyz shows node synced.
func sinkSynced(t *testing.T, addr, node string) bool {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var r engine.Readiness
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("decode readyz: %v", err)
	}
	for _, n := range r.Nodes {
		if n.Address == node {
			return n.Synced
		}
	}
	t.Fatalf("readyz has no node %s", node)
	return false
}

// ready says whether the run's /readyz answers 200.
func ready(addr string) bool {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
