//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	adminapi "github.com/pipeline/pipeline/cmd/pipeline/admin"
	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/internal/kubeapitest"
)

// The hub configuration of these tests: the pods of one namespace, by
// name, printed by the log sink into the file named by var.out, behind
// leader election with short timings.
const hubConfig = `
variable "out" {}

source "kubernetes" "pods" {
  resource  = "pods"
  namespace = "%[1]s"
  selector  = "app=backend"
}

transform "extract" "names" {
  input = source.kubernetes.pods
  key   = object.metadata.name
  value = 1
}

sink "log" "names" {
  input = transform.extract.names
  path  = var.out
}

leader_election {
  namespace      = "%[1]s"
  lease_name     = "hub"
  lease_duration = "%[2]s"
  renew_deadline = "4s"
  retry_period   = "1s"
}
`

const leaseDuration = 6 * time.Second

const agentConfig = `
source "kubernetes" "pods" {
  resource = "pods"
}

transform "extract" "ips" {
  input = source.kubernetes.pods
  key   = object.status.podIP
  value = 1
}

sink "ebpf_map" "allowed" {
  input = transform.extract.ips
  pin   = "/sys/fs/bpf/pipeline/allowed"
  key {
    type = "ipv4"
  }
  value {
    type = "u32"
    from = 1
  }
}
`

// TestDeployOnKubernetes runs the generated manifests against a real API
// server with RBAC on: they apply cleanly; the service account they create
// can do exactly what the configuration needs; and two instances of the
// hub elect one leader that alone writes, with a takeover after a kill.
func TestDeployOnKubernetes(t *testing.T) {
	srv := startKube(t)
	admin := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ns := kubeapitest.NewNamespace(t, admin)
	dir := t.TempDir()
	hubDir := filepath.Join(dir, "hub")
	agentDir := filepath.Join(dir, "agent")
	writeFile(t, filepath.Join(hubDir, "hub.hcl"), fmt.Sprintf(hubConfig, ns, leaseDuration))
	writeFile(t, filepath.Join(agentDir, "agent.hcl"), agentConfig)

	t.Run("apply", func(t *testing.T) {
		for _, args := range [][]string{
			{"manifests", "--mode", "hub", "--namespace", ns, "--name", "hub", "-var", "out=/tmp/names.log", hubDir},
			{"manifests", "--mode", "agent", "--namespace", ns, "--name", "agent", agentDir},
		} {
			applyYAML(t, srv, ns, runCLI(t, args...))
		}
	})

	kubeconfig := serviceAccountKubeconfig(t, srv, admin, ns, "hub", dir)
	t.Run("least privilege", func(t *testing.T) {
		rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		sa := kubernetes.NewForConfigOrDie(rc)
		ctx := context.Background()
		sel := metav1.ListOptions{LabelSelector: "app=backend"}
		if _, err := sa.CoreV1().Pods(ns).List(ctx, sel); err != nil {
			t.Fatalf("the service account cannot list the pods its source watches: %v", err)
		}
		forbidden := map[string]func() error{
			"secrets in its namespace": func() error { _, err := sa.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); return err },
			"configmaps":               func() error { _, err := sa.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); return err },
			"pods in another namespace": func() error {
				_, err := sa.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
				return err
			},
			"pods of every namespace": func() error { _, err := sa.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); return err },
			"another lease": func() error {
				_, err := sa.CoordinationV1().Leases(ns).Get(ctx, "other", metav1.GetOptions{})
				return err
			},
		}
		for what, call := range forbidden {
			if err := call(); !apierrors.IsForbidden(err) {
				t.Errorf("listing %s: got %v, want forbidden", what, err)
			}
		}
	})

	t.Run("leader election", func(t *testing.T) {
		leaderElection(t, admin, ns, hubDir, dir, kubeconfig)
	})
}

func leaderElection(t *testing.T, admin kubernetes.Interface, ns, hubDir, dir, kubeconfig string) {
	ctx := context.Background()
	createPods(t, admin, ns, "a", "b", "c")
	a := startInstance(t, hubDir, filepath.Join(dir, "a.log"), kubeconfig)
	b := startInstance(t, hubDir, filepath.Join(dir, "b.log"), kubeconfig)

	var leader, follower *instance
	waitFor(t, 30*time.Second, "one instance leads and both are ready", func() bool {
		ra, rb := a.readyz(), b.readyz()
		switch {
		case !ra.Ready || !rb.Ready:
			return false
		case ra.leading() && !rb.leading():
			leader, follower = a, b
		case rb.leading() && !ra.leading():
			leader, follower = b, a
		default:
			return false
		}
		return true
	})
	waitFor(t, 10*time.Second, "the leader writes every pod", func() bool { return len(leader.writes()) == 3 })
	if w := follower.writes(); len(w) != 0 {
		t.Fatalf("the follower wrote %v", w)
	}
	rejectLeaderChange(t, hubDir, leader, follower)

	if err := leader.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	_ = leader.cmd.Wait()
	createPods(t, admin, ns, "d")
	// client-go's bound: the follower takes the lease once it has seen it
	// unrenewed for lease_duration, polling every retry_period with up to
	// 1.2x jitter, so up to lease_duration + 2 x 2.2 retry periods after the
	// last renewal. The time it took is logged (and quoted in the README);
	// it is a figure, not a pass/fail line.
	waitFor(t, leaseDuration+5*time.Second, "the follower takes over", func() bool { return follower.readyz().leading() })
	t.Logf("takeover %v after the leader was killed (lease_duration %v)", time.Since(killed).Round(10*time.Millisecond), leaseDuration)
	waitFor(t, 10*time.Second, "the new leader converges", func() bool {
		w := strings.Join(follower.writes(), ",")
		return w == "a,b,c,d"
	})
	if err := admin.CoreV1().Pods(ns).Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the new leader applies a delete", func() bool {
		return strings.Contains(string(readFile(follower.out)), "- a\n")
	})
}

// rejectLeaderChange edits the hub's leader_election: both instances reject
// the reload, saying to restart, and go on electing and writing as before.
func rejectLeaderChange(t *testing.T, hubDir string, leader, follower *instance) {
	t.Helper()
	path := filepath.Join(hubDir, "hub.hcl")
	before := string(readFile(path))
	after := strings.Replace(before, `renew_deadline = "4s"`, `renew_deadline = "5s"`, 1)
	if after == before {
		t.Fatal("hub.hcl has no renew_deadline to change")
	}
	writeFile(t, path, after)
	for _, in := range []*instance{leader, follower} {
		var last engine.ReloadRecord
		waitFor(t, 10*time.Second, "the leader_election change is rejected", func() bool {
			last = in.lastReload()
			return last.Result == engine.ReloadRejected
		})
		if !strings.HasPrefix(last.Error, "leader_election changed (renew_deadline): ") || !strings.Contains(last.Error, "restart the pipeline") {
			t.Errorf("rejection: %q", last.Error)
		}
		if last.Generation != 1 {
			t.Errorf("config generation %d after a rejected reload, want 1", last.Generation)
		}
	}
	if !leader.readyz().leading() || follower.readyz().leading() {
		t.Fatal("leadership changed after a rejected reload")
	}
}

// lastReload returns the instance's latest reload record, or a zero one.
func (in *instance) lastReload() engine.ReloadRecord {
	var b adminapi.Reloads
	resp, err := http.Get("http://" + in.addr + "/reloads")
	if err != nil {
		return engine.ReloadRecord{}
	}
	defer resp.Body.Close()
	if json.NewDecoder(resp.Body).Decode(&b) != nil || len(b.Reloads) == 0 {
		return engine.ReloadRecord{}
	}
	return b.Reloads[0]
}

// instance is one `pipeline run` process of the hub configuration.
type instance struct {
	cmd  *exec.Cmd
	out  string
	addr string
	log  *bytes.Buffer
}

func startInstance(t *testing.T, dir, out, kubeconfig string) *instance {
	t.Helper()
	in := &instance{out: out, addr: freeAddr(t), log: &bytes.Buffer{}}
	in.cmd = exec.Command("pipeline", "run", "--listen", in.addr, "-var", "out="+out, dir)
	in.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	in.cmd.Stdout, in.cmd.Stderr = in.log, in.log
	if err := in.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if in.cmd.ProcessState == nil {
			_ = in.cmd.Process.Signal(syscall.SIGTERM)
			_ = in.cmd.Wait()
		}
		if t.Failed() {
			t.Logf("log of %s:\n%s", out, in.log)
		}
	})
	return in
}

type readiness struct {
	Ready  bool `json:"ready"`
	Leader *struct {
		Leading bool `json:"leading"`
	} `json:"leader_election"`
}

func (r readiness) leading() bool { return r.Leader != nil && r.Leader.Leading }

func (in *instance) readyz() readiness {
	var r readiness
	resp, err := http.Get("http://" + in.addr + "/readyz")
	if err != nil {
		return r
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(&r)
	return r
}

// writes returns the keys the instance's log sink upserted, sorted.
func (in *instance) writes() []string {
	var keys []string
	for _, line := range strings.Split(string(readFile(in.out)), "\n") {
		if k, ok := strings.CutPrefix(line, "+ "); ok {
			keys = append(keys, strings.Fields(k)[0])
		}
	}
	sort.Strings(keys)
	return keys
}

func readFile(path string) []byte {
	b, _ := os.ReadFile(path)
	return b
}

func startKube(t *testing.T) *kubeapitest.Server {
	t.Helper()
	if _, err := kubeapitest.Assets(); err != nil {
		missingInCI(t, "no kube-apiserver: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := kubeapitest.Start(ctx, kubeapitest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}

// applyYAML server-side applies every document of a manifests output.
func applyYAML(t *testing.T, srv *kubeapitest.Server, ns string, manifest []byte) {
	t.Helper()
	cfg := srv.RESTConfig()
	dyn := dynamic.NewForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cfg)))
	kinds := map[string]int{}
	for _, d := range strings.Split(string(manifest), "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			t.Fatalf("parse %q: %v", d, err)
		}
		if len(m) == 0 {
			continue // the leading comment
		}
		obj := &unstructured.Unstructured{Object: m}
		gvk := obj.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s: %v", gvk, err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if ns := obj.GetNamespace(); ns != "" {
			ri = dyn.Resource(mapping.Resource).Namespace(ns)
		} else {
			t.Cleanup(func() { _ = ri.Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{}) })
		}
		if _, err := ri.Apply(context.Background(), obj.GetName(), obj,
			metav1.ApplyOptions{FieldManager: "pipeline-manifests-test", Force: true}); err != nil {
			t.Errorf("apply %s %s: %v", gvk.Kind, obj.GetName(), err)
		}
		kinds[gvk.Kind]++
	}
	t.Logf("applied %v", kinds)
}

// serviceAccountKubeconfig writes a kubeconfig holding a token of the
// service account, the identity the pods of the manifests run as.
func serviceAccountKubeconfig(t *testing.T, srv *kubeapitest.Server, admin kubernetes.Interface, ns, name, dir string) string {
	t.Helper()
	exp := int64(3600)
	tok, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for service account %s: %v", name, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: srv.URL, CertificateAuthorityData: srv.CAPEM}
	cfg.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["sa"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "sa"}
	cfg.CurrentContext = "sa"
	path := filepath.Join(dir, "sa.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func createPods(t *testing.T, cs kubernetes.Interface, ns string, names ...string) {
	t.Helper()
	for _, n := range names {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"app": "backend"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func runCLI(t *testing.T, args ...string) []byte {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("pipeline %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
	}
	return out.Bytes()
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
