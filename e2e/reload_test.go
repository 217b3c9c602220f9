//go:build integration

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/internal/kubeapitest"
	"github.com/pipeline/pipeline/schema"
)

// podLists returns how many LIST requests for pods the API server served,
// from its own apiserver_request_total.
func podLists(t *testing.T, cs *kubernetes.Clientset) float64 {
	t.Helper()
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("API server metrics: %v", err)
	}
	var total float64
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="pods"`) ||
			!strings.Contains(line, `verb="LIST"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			total += v
		}
	}
	return total
}

const reloadFlagship = `
cluster "test" {
  kubeconfig = %s
}
source "kubernetes" "pods" {
  cluster   = cluster.test
  resource  = "pods"
  namespace = %s
}
transform "extract" "ips" {
  input = source.kubernetes.pods
  where = try(object.status.podIP, "") != ""
  key   = object.status.podIP
}
sink "ebpf_map" "allowed" {
  input  = transform.extract.ips
  pin    = %s
  resync = %q
  key {
    type = "ipv4"
  }
  value {
    type = "u8"
    from = 1
  }
}
%s`

// TestReloadSinkOnlyChange: changing only a sink attribute keeps the
// kubernetes source running (no LIST on the real API server) and leaves
// the pinned map's entries alone (no delete and re-add); a new sink that
// cannot open (a pin off the bpffs) rolls back while the old graph flows.
func TestReloadSinkOnlyChange(t *testing.T) {
	requireRoot(t)
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ns := kubeapitest.NewNamespace(t, cs)
	pin := pinDir(t) + "/allowed"
	kc := kubeconfig(t)
	config := func(resync, extra string) string {
		return fmt.Sprintf(reloadFlagship, hclString(kc), hclString(ns), hclString(pin), resync, extra)
	}
	for i := range 20 {
		reloadPod(t, cs, ns, fmt.Sprintf("p%d", i), fmt.Sprintf("10.1.0.%d", i+1))
	}
	r := start(t, config("1m", ""))
	r.waitReady(t)
	m, err := ebpf.LoadPinnedMap(pin, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	eventually(t, 10*time.Second, "20 entries in the map", func() bool { return mapLen(m) == 20 })

	lists := podLists(t, cs)
	if lists == 0 {
		t.Fatal("no pod LIST counted, though the source listed at start: apiserver_request_total not read")
	}
	ups, dels := r.writes("sink.ebpf_map.allowed")
	rec := reload(t, r, config("2m", ""))
	if rec.Result != engine.ReloadApplied {
		t.Fatalf("reload: %+v", rec)
	}
	want := map[string]graph.Action{"source.kubernetes.pods": graph.Kept, "transform.extract.ips": graph.Kept,
		"sink.ebpf_map.allowed": graph.Rebuilt}
	for _, n := range rec.Nodes {
		if want[n.Address] != n.Action {
			t.Errorf("%s: %s, want %s", n.Address, n.Action, want[n.Address])
		}
	}
	r.waitReady(t)
	if got := podLists(t, cs) - lists; got != 0 {
		t.Errorf("the reload listed pods %v times; a kept source must not relist", got)
	}
	if u, d := r.writes("sink.ebpf_map.allowed"); u != ups || d != dels {
		t.Errorf("the reload wrote %v entries and deleted %v; want none (every entry stays)", u-ups, d-dels)
	}
	// The kept source still feeds the new sink.
	reloadPod(t, cs, ns, "late", "10.1.0.99")
	eventually(t, 10*time.Second, "the new pod's IP in the map", func() bool { return mapLen(m) == 21 })
	// The sink counts a write after the map holds it: wait for the count
	// too, or the next check sees this write as the rollback's.
	eventually(t, 10*time.Second, "the new pod's write counted", func() bool {
		u, _ := r.writes("sink.ebpf_map.allowed")
		return u == ups+1
	})

	// A new sink whose pin is not on a bpffs fails to open: rollback.
	bad := fmt.Sprintf("sink \"ebpf_map\" \"bad\" {\n  input = transform.extract.ips\n  pin = %s\n  key {\n    type = \"ipv4\"\n  }\n  value {\n    type = \"u8\"\n    from = 1\n  }\n}\n",
		hclString(t.TempDir()+"/bad"))
	ups, dels = r.writes("sink.ebpf_map.allowed")
	rec = reload(t, r, config("2m", bad))
	if rec.Result != engine.ReloadRolledBack || !strings.Contains(rec.Error, "sink.ebpf_map.bad: open target") {
		t.Fatalf("reload with a bad pin: %s %q", rec.Result, rec.Error)
	}
	if u, d := r.writes("sink.ebpf_map.allowed"); u != ups || d != dels {
		t.Errorf("the rolled back reload wrote %v entries and deleted %v", u-ups, d-dels)
	}
	reloadPod(t, cs, ns, "after", "10.1.0.100")
	eventually(t, 10*time.Second, "the old graph to keep flowing", func() bool { return mapLen(m) == 22 })
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "p0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "a deleted pod's IP to leave the map", func() bool { return mapLen(m) == 21 })
}

func reload(t *testing.T, r *running, src string) engine.ReloadRecord {
	t.Helper()
	cfg, diags := schema.NewLoader().ParseSource(t.TempDir()+"/e2e.hcl", []byte(src), schema.Options{Environ: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	g, diags := graph.Compile(cfg, registry())
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return r.rt.Reload(context.Background(), g, engine.ReloadRecord{Trigger: "test"}, 30*time.Second)
}

func reloadPod(t *testing.T, cs *kubernetes.Clientset, ns, name, ip string) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/c"}}}}
	created, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.PodIP = ip
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func mapLen(m *ebpf.Map) int {
	var k [4]byte
	var v uint8
	n := 0
	it := m.Iterate()
	for it.Next(&k, &v) {
		n++
	}
	return n
}
