//go:build integration

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/internal/kubeapitest"
	"github.com/pipeline/pipeline/internal/natstest"
)

// TestRobustnessServers runs `pipeline run` (its own process) from the
// real kube-apiserver into a bucket of a real nats-server under a seeded,
// random schedule of faults while pods change: the API server stopped and
// started again, nats-server killed (-9) and restarted, and the
// configuration file edited (the value each key gets changes, so every key
// is rewritten). At the end the bucket must equal a model computed from the
// final pods and configuration, the process must still run, and neither its
// goroutines nor its memory may have grown without bound.
//
// The short form (8 faults, each kind among them) runs in make test; PIPELINE_SOAK (a duration)
// runs it longer, PIPELINE_SEED replays a schedule.
func TestRobustnessServers(t *testing.T) {
	bin, err := exec.LookPath("pipeline") // the test binary, installed by TestMain
	if err != nil {
		t.Fatal(err)
	}
	seed, steps, until := robustSchedule(t, 8)
	rng := rand.New(rand.NewPCG(seed, 11))

	srv := startKube(t)
	admin := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ns := kubeapitest.NewNamespace(t, admin)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := srv.WriteKubeconfig(kubeconfig, "test"); err != nil {
		t.Fatal(err)
	}
	natsSrv := natstest.External(t)
	cfg := filepath.Join(dir, "p.hcl")
	version := 0
	writeVersion := func() {
		src := fmt.Sprintf(`
cluster "test" {
  kubeconfig = %q
}
source "kubernetes" "pods" {
  cluster   = cluster.test
  resource  = "pods"
  namespace = %q
}
transform "extract" "r" {
  input = source.kubernetes.pods
  key   = object.metadata.name
  value = { prio = tonumber(object.metadata.labels.prio), version = %d }
}
sink "nats_kv" "b" {
  input         = transform.extract.r
  url           = %q
  bucket        = "robust"
  write_timeout = "2s"
  resync        = "2s"
}
`, kubeconfig, ns, version, natsSrv.URL())
		if err := os.WriteFile(cfg+".tmp", []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(cfg+".tmp", cfg); err != nil {
			t.Fatal(err)
		}
	}
	writeVersion()

	pods := map[string]int{} // name -> prio, what the API server holds
	apiUp := true
	ctx := context.Background()
	setPrio := func(name string, prio int) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"prio": strconv.Itoa(prio)}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if _, ok := pods[name]; ok {
			cur, err := admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cur.Labels = p.Labels
			if _, err := admin.CoreV1().Pods(ns).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		} else if _, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pods[name] = prio
	}
	for i := range 4 {
		setPrio(fmt.Sprint("p", i), i)
	}
	model := func() map[string]robustValue {
		out := map[string]robustValue{}
		for name, prio := range pods {
			out[name] = robustValue{Prio: prio, Version: version}
		}
		return out
	}

	listen := fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t))
	p := exec.Command(bin, "run", "--listen", listen, "--watch-debounce", "100ms", cfg)
	var logs nodetest.LogBuffer
	p.Stdout, p.Stderr = &logs, &logs
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- p.Wait() }()
	defer func() {
		p.Process.Signal(syscall.SIGKILL)
		<-exited
	}()
	converge := func(what string) {
		t.Helper()
		want := model()
		deadline := time.Now().Add(3 * time.Minute)
		for {
			got, err := readBucket(natsSrv.URL(), "robust")
			if err == nil && cmp.Equal(want, got) {
				return
			}
			select {
			case err := <-exited:
				t.Fatalf("%s: pipeline exited: %v\nlogs:\n%s", what, err, tailOf(&logs))
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the bucket does not equal the model after 3 minutes (-model +bucket):\n%s%v\nlogs:\n%s", what, cmp.Diff(want, got), err, tailOf(&logs))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	converge("start")
	baseGo, baseRSS := processLoad(t, listen, p.Process.Pid)

	survived := map[string]int{}
	// Every kind of fault comes once first, in a random order, so the
	// short form sees each of them.
	first := []int{0, 3, 4, 5}
	rng.Shuffle(len(first), func(i, j int) { first[i], first[j] = first[j], first[i] })
	for step := 0; step < steps && (until.IsZero() || time.Now().Before(until)); step++ {
		f := rng.IntN(8)
		if step < len(first) {
			f = first[step]
		}
		switch {
		case f < 3 && apiUp:
			name := fmt.Sprint("p", rng.IntN(8))
			if _, ok := pods[name]; ok && rng.IntN(3) == 0 {
				if err := admin.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
					t.Fatal(err)
				}
				delete(pods, name)
				survived["pod deleted"]++
			} else {
				setPrio(name, rng.IntN(1000))
				survived["pod written"]++
			}
		case f == 3:
			sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			if apiUp {
				err = srv.StopAPIServer(sctx)
				survived["API server stopped"]++
			} else {
				err = srv.StartAPIServer(sctx)
				survived["API server started again"]++
			}
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			apiUp = !apiUp
		case f == 4:
			natsSrv.Restart(time.Duration(rng.IntN(2000)) * time.Millisecond) // kill -9, down, start
			survived["nats-server killed -9 and restarted"]++
		case f == 5:
			version++
			writeVersion()
			survived["configuration edited"]++
		default:
			survived["pause"]++
		}
		time.Sleep(time.Duration(rng.IntN(500)) * time.Millisecond)
	}
	if !apiUp {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		if err := srv.StartAPIServer(sctx); err != nil {
			t.Fatal(err)
		}
	}
	converge("end")
	endGo, endRSS := processLoad(t, listen, p.Process.Pid)
	t.Logf("survived %v; goroutines %d -> %d, RSS %.0f -> %.0f MB", survived, baseGo, endGo, baseRSS, endRSS)
	if endGo > 2*baseGo+50 {
		t.Errorf("goroutines grew from %d to %d", baseGo, endGo)
	}
	if endRSS > 2*baseRSS+100 {
		t.Errorf("RSS grew from %.0f to %.0f MB", baseRSS, endRSS)
	}
	if !until.IsZero() {
		fmt.Printf("soak: seed %d survived %v\n", seed, survived)
	}
}

// robustValue is a bucket value of TestRobustnessServers.
type robustValue struct {
	Prio    int `json:"prio"`
	Version int `json:"version"`
}

// readBucket reads every key of a KV bucket with its value.
func readBucket(url, name string) (map[string]robustValue, error) {
	nc, err := nats.Connect(url, nats.Timeout(2*time.Second))
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, name)
	if err != nil {
		return nil, err
	}
	lister, err := kv.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]robustValue{}
	for k := range lister.Keys() {
		e, err := kv.Get(ctx, k)
		if err != nil {
			return nil, err
		}
		var v robustValue
		if err := json.Unmarshal(e.Value(), &v); err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}

// processLoad reads the goroutines of a pipeline process (its /metrics)
// and its resident memory in MB.
func processLoad(t *testing.T, listen string, pid int) (goroutines int, rss float64) {
	t.Helper()
	resp, err := http.Get("http://" + listen + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "go_goroutines "); ok {
			goroutines, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(st), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			rss = kb / 1024
		}
	}
	if goroutines == 0 {
		t.Fatalf("no go_goroutines in %s/metrics", listen)
	}
	return goroutines, rss
}
