//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/pipeline/pipeline/internal/kubeapitest"
)

// planConfig watches the backend pods of one namespace and keeps a pinned
// map of their IPs (value: the pod's weight label) and an audit trail.
const planConfig = `
variable "kubeconfig" {}
variable "pin" {}
variable "audit" {}

cluster "test" {
  kubeconfig = var.kubeconfig
}

source "kubernetes" "pods" {
  cluster   = cluster.test
  resource  = "pods"
  namespace = "%s"
  selector  = "app=backend"
}

transform "extract" "ips" {
  input = source.kubernetes.pods
  where = try(object.status.podIP, "") != ""
  key   = object.status.podIP
  value = { weight = tonumber(object.metadata.labels.weight) }
}

sink "ebpf_map" "allowed" {
  input       = transform.extract.ips
  pin         = var.pin
  max_entries = 4
  prune       = true
  key {
    type = "ip"
  }
  value {
    type = "u32"
    from = record.value.weight
  }
}

sink "audit" "trail" {
  input = transform.extract.ips
  path  = var.audit
}
`

// TestPlanKubernetesMap plans against the real API server and a real
// pinned map with known drift: the plan lists exactly the drift (text
// golden and JSON), writes nothing, run then applies exactly that, a
// second plan finds nothing, a missing map is "would be created" and a bad
// credential fails naming its phase.
func TestPlanKubernetesMap(t *testing.T) {
	if os.Geteuid() != 0 {
		missingInCI(t, "plan of a pinned map needs root (bpffs)")
	}
	srv := startKube(t)
	admin := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ns := kubeapitest.NewNamespace(t, admin)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := srv.WriteKubeconfig(kubeconfig, "test"); err != nil {
		t.Fatal(err)
	}
	bpfDir, err := os.MkdirTemp("/sys/fs/bpf", "plan-test-")
	if err != nil {
		missingInCI(t, "no bpffs at /sys/fs/bpf: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(bpfDir) })
	pin, audit := filepath.Join(bpfDir, "allowed"), filepath.Join(dir, "audit.jsonl")
	cfg := filepath.Join(dir, "p.hcl")
	writeFile(t, cfg, fmt.Sprintf(planConfig, ns))
	vars := []string{"-var", "kubeconfig=" + kubeconfig, "-var", "pin=" + pin, "-var", "audit=" + audit}

	podWithIP(t, admin, ns, "a", "10.244.1.1", "1")
	podWithIP(t, admin, ns, "b", "10.244.1.2", "1")
	podWithIP(t, admin, ns, "c", "10.244.1.3", "1")
	applyOnce(t, dir, cfg, vars, pin, 3)

	// The drift: c goes, b's weight changes, d comes.
	if err := admin.CoreV1().Pods(ns).Delete(context.Background(), "c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	b, err := admin.CoreV1().Pods(ns).Get(context.Background(), "b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Labels["weight"] = "2"
	if _, err := admin.CoreV1().Pods(ns).Update(context.Background(), b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	podWithIP(t, admin, ns, "d", "10.244.1.4", "1")

	before := worldState(t, pin, audit, bpfDir, dir)
	text, code := planCLI(append(append([]string{"plan"}, vars...), cfg)...)
	if code != 2 {
		t.Fatalf("plan exited %d, want 2:\n%s", code, text)
	}
	text = strings.NewReplacer(pin, "PIN", audit, "AUDIT", ns+"/", "NS/").Replace(text)
	checkGolden(t, "testdata/plan_kubernetes.golden", []byte(text))
	out, code := planCLI(append(append([]string{"plan", "--json"}, vars...), cfg)...)
	if code != 2 {
		t.Fatalf("plan --json exited %d, want 2:\n%s", code, out)
	}
	checkPlanJSON(t, out, ns)
	if diff := cmp.Diff(before, worldState(t, pin, audit, bpfDir, dir)); diff != "" {
		t.Fatalf("plan changed the world (-before +after):\n%s", diff)
	}

	// run applies exactly what plan listed: 2 upserts (d, b) and 1 delete (c)
	// (the audit trail, which reads back what it recorded, the same).
	r := launchVars(t, cfg, varValues(vars))
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	waitReady(t, client, "http://"+r.addr+"/readyz")
	metrics := get(t, client, "http://"+r.addr+"/metrics")
	for _, want := range []string{
		`pipeline_sink_writes_total{node="sink.ebpf_map.allowed",op="upsert",result="ok"} 2`,
		`pipeline_sink_writes_total{node="sink.ebpf_map.allowed",op="delete",result="ok"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("run did not write what plan listed: no %s in\n%s", want, grepLines(metrics, "pipeline_sink_writes_total"))
		}
	}
	if err := r.stop(); err != nil {
		t.Fatalf("run: %v\n%s", err, r.stderr.String())
	}
	if out, code := planCLI(append(append([]string{"plan"}, vars...), cfg)...); code != 0 {
		t.Errorf("plan after run exited %d, want 0:\n%s", code, out)
	}

	t.Run("missing map", func(t *testing.T) {
		missing := filepath.Join(bpfDir, "absent", "allowed")
		out, code := planCLI("plan", "-var", "kubeconfig="+kubeconfig, "-var", "pin="+missing, "-var", "audit="+audit, cfg)
		if code != 2 || !strings.Contains(out, "would be created") {
			t.Errorf("plan exited %d, want 2 and \"would be created\":\n%s", code, out)
		}
		if _, err := os.Stat(filepath.Dir(missing)); !os.IsNotExist(err) {
			t.Errorf("plan created %s (%v)", filepath.Dir(missing), err)
		}
	})
	t.Run("bad credential", func(t *testing.T) {
		bad := filepath.Join(dir, "bad.kubeconfig")
		c := clientcmdapi.NewConfig()
		c.Clusters["test"] = &clientcmdapi.Cluster{Server: srv.URL, CertificateAuthorityData: srv.CAPEM}
		c.AuthInfos["x"] = &clientcmdapi.AuthInfo{Token: "not-a-valid-token"}
		c.Contexts["x"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "x"}
		c.CurrentContext = "x"
		if err := clientcmd.WriteToFile(*c, bad); err != nil {
			t.Fatal(err)
		}
		out, code := planCLI("plan", "-var", "kubeconfig="+bad, "-var", "pin="+pin, "-var", "audit="+audit, cfg)
		if code != 1 || !strings.Contains(out, "plan: sync sources: source.kubernetes.pods") || !strings.Contains(out, "authentication") {
			t.Errorf("plan exited %d, want 1 naming the sync phase and authentication:\n%s", code, out)
		}
	})
}

// applyOnce runs the pipeline until the map holds want entries.
func applyOnce(t *testing.T, dir, cfg string, vars []string, pin string, want int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var stderr bytes.Buffer
	go func() {
		done <- runPipeline(ctx, &bytes.Buffer{}, &stderr, []string{cfg}, runFlags{vars: varValues(vars), logFormat: "json", logLevel: "info"})
	}()
	waitFor(t, 30*time.Second, fmt.Sprintf("the map holds %d entries", want), func() bool { return len(dumpMap(t, pin)) == want })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
}

// launchVars runs the pipeline on cfg with variables until stop.
func launchVars(t *testing.T, cfg string, vars []string) *launched {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &launched{cancel: cancel, done: make(chan error, 1)}
	addrc := make(chan string, 1)
	go func() {
		r.done <- runPipeline(ctx, &bytes.Buffer{}, &r.stderr, []string{cfg}, runFlags{vars: vars, listen: "127.0.0.1:0",
			logFormat: "json", logLevel: "info", onListen: func(a string) { addrc <- a }})
	}()
	select {
	case r.addr = <-addrc:
	case err := <-r.done:
		cancel()
		t.Fatalf("run ended early: %v\n%s", err, r.stderr.String())
	}
	return r
}

func varValues(args []string) []string {
	var out []string
	for i := 1; i < len(args); i += 2 {
		out = append(out, args[i])
	}
	return out
}

func podWithIP(t *testing.T, cs kubernetes.Interface, ns, name, ip, weight string) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "backend", "weight": weight}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	p, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}}
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// dumpMap returns every entry of the pinned map as key=value hex, sorted;
// nil when the map does not exist.
func dumpMap(t *testing.T, pin string) []string {
	t.Helper()
	m, err := ebpf.LoadPinnedMap(pin, &ebpf.LoadPinOptions{ReadOnly: true})
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var out []string
	var k, v []byte
	it := m.Iterate()
	for it.Next(&k, &v) {
		out = append(out, hex.EncodeToString(k)+"="+hex.EncodeToString(v))
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// worldState is everything plan must leave alone: the map's entries, the
// audit file's bytes and the listings of the directories involved.
func worldState(t *testing.T, pin, audit string, dirs ...string) map[string]string {
	t.Helper()
	st := map[string]string{"map": strings.Join(dumpMap(t, pin), "\n")}
	b, err := os.ReadFile(audit)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	st["audit"] = string(b)
	for _, d := range dirs {
		var names []string
		_ = filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err == nil {
				info, _ := e.Info()
				if info != nil {
					names = append(names, fmt.Sprintf("%s %d %s", p, info.Size(), info.ModTime()))
				}
			}
			return nil
		})
		st["dir "+d] = strings.Join(names, "\n")
	}
	return st
}

func checkPlanJSON(t *testing.T, out, ns string) {
	t.Helper()
	var doc struct {
		FormatVersion string `json:"format_version"`
		Sinks         []struct {
			Address string `json:"address"`
			Changes []struct {
				Action string `json:"action"`
				Key    string `json:"key"`
				Shown  struct {
					Before, After string
				} `json:"shown"`
				Origins []string `json:"origins"`
			} `json:"changes"`
		} `json:"sinks"`
		Summary map[string]int `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("plan --json: %v\n%s", err, out)
	}
	var got []string
	for _, s := range doc.Sinks {
		if s.Address != "sink.ebpf_map.allowed" {
			continue
		}
		for _, c := range s.Changes {
			got = append(got, fmt.Sprintf("%s %s %s->%s %v", c.Action, c.Key, c.Shown.Before, c.Shown.After, c.Origins))
		}
	}
	want := []string{"update 10.244.1.2 1->2 [pod " + ns + "/b]", "delete 10.244.1.3 1-> []", "create 10.244.1.4 ->1 [pod " + ns + "/d]"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("map changes (-want +got):\n%s", diff)
	}
	if doc.FormatVersion != "1.5" || doc.Summary["add"] != 2 || doc.Summary["change"] != 2 || doc.Summary["remove"] != 2 || doc.Summary["emit"] != 0 {
		t.Errorf("format_version %q, summary %v", doc.FormatVersion, doc.Summary)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
