//go:build integration

package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/internal/kubeapitest"
)

// fanInConfig puts pod IPs (through extract and a grace period) and
// static CIDRs into one pinned LPM map with prune on. 10.9.9.9/32 is
// declared statically and is also a pod's IP: the key lives while either
// input wants it.
const fanInConfig = `
cluster "test" {
  kubeconfig = %s
}
source "kubernetes" "pods" {
  cluster   = cluster.test
  resource  = "pods"
  namespace = %s
  selector  = "app=web"
}
transform "extract" "ips" {
  input = source.kubernetes.pods
  where = try(object.status.podIP, "") != ""
  key   = "${object.status.podIP}/32"
  value = { from = "pod" }
}
transform "grace_period" "drain" {
  input = transform.extract.ips
  delay = "%s"
}
source "static" "cidrs" {
  records = {
    "192.168.0.0/16" = { from = "static" }
    "10.9.9.9/32"    = { from = "static" }
  }
}
sink "ebpf_map" "allowed" {
  inputs      = [transform.grace_period.drain, source.static.cidrs]
  on_conflict = "first"
  pin         = %s
  type        = "lpm_trie"
  max_entries = 64
  resync      = "1s"
  key {
    type = "ipv4_prefix"
  }
  value {
    type = "u8"
    from = 1
  }
}
`

// TestFanInPodsAndStaticIntoOneMap: pods and static CIDRs share one map
// with prune on; prune removes a foreign entry but neither input's keys;
// a key both inputs hold outlives the pod; explain names the pod, the
// chain and the entry, and a deletion's due time in the grace period.
func TestFanInPodsAndStaticIntoOneMap(t *testing.T) {
	requireRoot(t)
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ns := kubeapitest.NewNamespace(t, cs)
	pin := pinDir(t) + "/allowed"
	r := start(t, fmt.Sprintf(fanInConfig, hclString(kubeconfig(t)), hclString(ns), "3s", hclString(pin)))
	web := createPod(ctx, t, cs, ns, "web", "10.1.2.3")
	both := createPod(ctx, t, cs, ns, "both", "10.9.9.9")
	r.waitReady(t)
	m, err := ebpf.LoadPinnedMap(pin, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	want := []string{"10.1.2.3/32", "10.9.9.9/32", "192.168.0.0/16"}
	eventually(t, 10*time.Second, fmt.Sprintf("map to hold %v", want), func() bool { return slices.Equal(mapKeys(t, m), want) })

	// Prune is on: a foreign entry goes at the next resync, nobody's keys do.
	if err := m.Put(lpmKey(netip.MustParsePrefix("172.16.0.0/12")), uint8(1)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "foreign entry pruned", func() bool { return slices.Equal(mapKeys(t, m), want) })

	// Explain a pod's key: the pod, the chain and the entry.
	ex := r.rt.Explain(ctx, "10.1.2.3/32")
	if len(ex.Entries) != 1 {
		t.Fatalf("explain 10.1.2.3/32: %d entries, want 1: %+v", len(ex.Entries), ex)
	}
	e := ex.Entries[0]
	if e.Sink != "sink.ebpf_map.allowed" || e.Status != "applied" || e.Origin == nil ||
		e.Origin.Name != "web" || e.Origin.Namespace != ns || e.Origin.UID != string(web.UID) || e.Origin.Source != "source.kubernetes.pods" {
		t.Fatalf("explain entry = %+v (origin %+v)", e, e.Origin)
	}
	if got, wantPath := stageNodes(e.Path), []string{"source.kubernetes.pods", "transform.extract.ips", "transform.grace_period.drain"}; !slices.Equal(got, wantPath) {
		t.Fatalf("path = %v, want %v", got, wantPath)
	}
	if !e.Path[0].Present || e.Path[0].Key != ns+"/web" || !e.Path[2].Present {
		t.Fatalf("stages = %+v", e.Path)
	}
	// A static key's origin is its line in the configuration.
	ex = r.rt.Explain(ctx, "192.168.0.0/16")
	line := 1 + strings.Count(fanInConfig[:strings.Index(fanInConfig, `"192.168.0.0/16" =`)], "\n")
	if len(ex.Entries) != 1 || ex.Entries[0].Origin == nil || ex.Entries[0].Origin.Line != line {
		t.Fatalf("explain 192.168.0.0/16: origin %+v, want line %d", ex.Entries[0].Origin, line)
	}

	// Delete both pods: web's key waits out its grace period (explain
	// shows when it goes), then goes; 10.9.9.9/32 stays (static wants it).
	for _, name := range []string{web.Name, both.Name} {
		if err := cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deleted := time.Now()
	var due time.Time
	eventually(t, 5*time.Second, "a pending deletion in explain", func() bool {
		ex := r.rt.Explain(ctx, "10.1.2.3/32")
		if len(ex.Entries) != 1 || len(ex.Entries[0].Path) != 3 {
			return false
		}
		due = ex.Entries[0].Path[2].PendingDelete
		return !due.IsZero()
	})
	if d := due.Sub(deleted); d < 2*time.Second || d > 4*time.Second {
		t.Fatalf("deletion due %s after the delete, want about 3s", d)
	}
	want = []string{"10.9.9.9/32", "192.168.0.0/16"}
	eventually(t, 10*time.Second, fmt.Sprintf("map to hold %v after the grace period", want), func() bool { return slices.Equal(mapKeys(t, m), want) })
	if time.Now().Before(due.Add(-100 * time.Millisecond)) {
		t.Fatalf("deleted before its due time %s", due)
	}
	ex = r.rt.Explain(ctx, "10.1.2.3/32")
	if len(ex.Entries) != 0 || len(ex.Gates) == 0 {
		t.Fatalf("explain of a gone key: %+v", ex)
	}
	// Once the pod's deletion passed too, the key is the static input's.
	eventually(t, 5*time.Second, "10.9.9.9/32 to come from source.static.cidrs", func() bool {
		ex := r.rt.Explain(ctx, "10.9.9.9/32")
		return len(ex.Entries) == 1 && ex.Entries[0].Origin != nil && ex.Entries[0].Origin.Source == "source.static.cidrs" &&
			ex.Entries[0].Status == "applied"
	})
	if !slices.Equal(mapKeys(t, m), want) {
		t.Fatalf("map = %v, want %v", mapKeys(t, m), want)
	}
}

func createPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name, ip string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/c"}}}}
	created, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.PodIP = ip
	updated, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return updated
}

func stageNodes(st []engine.Stage) []string {
	out := make([]string, len(st))
	for i, s := range st {
		out[i] = s.Node
	}
	return out
}

// lpmKey encodes an IPv4 prefix as the map's key: prefix length (native
// endian u32) then the address.
func lpmKey(p netip.Prefix) []byte {
	b := make([]byte, 8)
	binary.NativeEndian.PutUint32(b[:4], uint32(p.Bits()))
	a := p.Addr().As4()
	copy(b[4:], a[:])
	return b
}

// mapKeys lists the map's keys as sorted prefixes.
func mapKeys(t *testing.T, m *ebpf.Map) []string {
	t.Helper()
	var out []string
	var k []byte
	var v uint8
	it := m.Iterate()
	for it.Next(&k, &v) {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte(k[4:8])), int(binary.NativeEndian.Uint32(k[:4])))
		out = append(out, p.String())
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}
