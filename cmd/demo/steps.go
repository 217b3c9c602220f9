package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const ns = "shop"

var pods = []struct{ name, app, ip string }{
	{"backend-1", "backend", "10.244.1.11"},
	{"backend-2", "backend", "10.244.1.12"},
	{"backend-3", "backend", "10.244.2.13"},
	{"frontend-1", "frontend", "10.244.2.21"},
}

func (d *demo) startPipeline(ctx context.Context) error {
	if d.ebpf {
		say("running the flagship job (examples/demo): kubernetes -> extract -> debounce -> grace_period -> ebpf_map + log")
	} else {
		say("running the flagship job without the map (examples/demo-unprivileged): kubernetes -> extract -> debounce -> grace_period -> log")
	}
	return d.runPipeline(ctx, "warn")
}

// runPipeline starts bin/pipeline and waits until /readyz says ready.
func (d *demo) runPipeline(ctx context.Context, logLevel string) error {
	if err := d.startPipelineProcess(logLevel); err != nil {
		return err
	}
	return waitFor(ctx, 30*time.Second, "pipeline ready (/readyz)", func() (bool, error) {
		body, code, err := d.get("/readyz")
		return code == http.StatusOK && strings.Contains(body, `"ready":true`), err
	})
}

func (d *demo) createPods(ctx context.Context) error {
	say("creating namespace %q and 4 pods (3 labelled app=backend); setting their status.podIP as a kubelet would", ns)
	if _, err := d.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	for _, p := range pods {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.name, Labels: map[string]string{"app": p.app}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}}}
		created, err := d.cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		created.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: p.ip, PodIPs: []corev1.PodIP{{IP: p.ip}}}
		if _, err := d.cs.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return err
		}
		fmt.Printf("    pod %-10s app=%-8s ip=%s\n", p.name, p.app, p.ip)
	}
	return nil
}

func (d *demo) podsAllowed(ctx context.Context) error {
	return d.expectMap(ctx, "the three backend IPs allowed", "10.244.1.11", "10.244.1.12", "10.244.2.13")
}

// startAgentStep runs an agent that reads the hub's NATS bucket: the same
// allow-list reaches it without its own API server watch.
func (d *demo) startAgentStep(ctx context.Context) error {
	say("starting an agent (examples/demo-agent): it reads the pod IPs the pipeline mirrors into a NATS key-value bucket on its embedded server")
	if err := d.startAgent(); err != nil {
		return err
	}
	return d.expectAgent(ctx, "the agent has the three backend IPs", "10.244.1.11", "10.244.1.12", "10.244.2.13")
}

// expectAgent waits until the agent's allow-list holds exactly want.
func (d *demo) expectAgent(ctx context.Context, what string, want ...string) error {
	var keys []string
	err := waitFor(ctx, 15*time.Second, what, func() (bool, error) {
		got, err := replayLog(d.agentLog)
		keys = keys[:0]
		for _, e := range got {
			keys = append(keys, e.key)
		}
		return strings.Join(keys, ",") == strings.Join(want, ","), err
	})
	if err != nil {
		return fmt.Errorf("%w (agent holds %s)", err, strings.Join(keys, ","))
	}
	fmt.Printf("    agent: %s\n", strings.Join(keys, ", "))
	return nil
}

// agentFollowed checks that the agent followed the removals and stops it.
func (d *demo) agentFollowed(ctx context.Context) error {
	say("the agent followed the removals through NATS (an agent drains with its own grace_period in examples/agent)")
	err := d.expectAgent(ctx, "the agent has only backend-1's IP", "10.244.1.11")
	d.stopAgent()
	return err
}

func (d *demo) deletePod(ctx context.Context) error {
	say("deleting pod backend-2: its IP stays allowed for the 5s grace period, then is drained")
	start := time.Now()
	if err := d.cs.CoreV1().Pods(ns).Delete(ctx, "backend-2", metav1.DeleteOptions{}); err != nil {
		return err
	}
	time.Sleep(2 * time.Second)
	if err := d.expectMap(ctx, "still allowed 2s after the delete", "10.244.1.11", "10.244.1.12", "10.244.2.13"); err != nil {
		return err
	}
	if err := d.expectMap(ctx, "drained", "10.244.1.11", "10.244.2.13"); err != nil {
		return err
	}
	fmt.Printf("    removed %s after the delete\n", time.Since(start).Round(100*time.Millisecond))
	return nil
}

func (d *demo) relabelPod(ctx context.Context) error {
	say("relabelling backend-3 to app=canary: it leaves the selector, which is a removal too")
	p, err := d.cs.CoreV1().Pods(ns).Get(ctx, "backend-3", metav1.GetOptions{})
	if err != nil {
		return err
	}
	p.Labels["app"] = "canary"
	if _, err := d.cs.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		return err
	}
	return d.expectMap(ctx, "drained after the grace period", "10.244.1.11")
}

func (d *demo) restartWritesNothing(ctx context.Context) error {
	say("stopping the pipeline (SIGTERM): the pinned map keeps its entries")
	d.stopPipeline()
	if err := d.expectMap(ctx, "after exit", "10.244.1.11"); err != nil {
		return err
	}
	say("starting it again, logging at info: it reads the map, finds it equal to what the cluster says, and writes nothing")
	fmt.Println("    (the log sink keeps no state, so it prints the current record again; the map sink compares first)")
	if err := d.runPipeline(ctx, "info"); err != nil {
		return err
	}
	body, _, err := d.get("/metrics")
	if err != nil {
		return err
	}
	writes := metricLines(body, "pipeline_sink_writes_total", "sink.ebpf_map.allowed")
	for _, l := range writes {
		if !strings.HasSuffix(l, " 0") {
			return fmt.Errorf("the restart wrote to the map: %s", l)
		}
	}
	fmt.Println("    the map sink's write counters, by operation and result, all stay at 0:")
	fmt.Printf("    %s\n", strings.Join(writes, "\n    "))
	return nil
}

func (d *demo) expectMap(ctx context.Context, what string, want ...string) error {
	var got []entry
	keys := func() string {
		ks := make([]string, len(got))
		for i, e := range got {
			ks[i] = e.key
		}
		return strings.Join(ks, ",")
	}
	err := waitFor(ctx, 15*time.Second, what, func() (bool, error) {
		var err error
		got, err = d.allowed()
		return keys() == strings.Join(want, ","), err
	})
	if err != nil {
		return fmt.Errorf("%w: the allow-list holds %s, want %s", err, keys(), strings.Join(want, ","))
	}
	where := d.pin
	if !d.ebpf {
		where = rel(d.allowedLog)
	}
	fmt.Printf("    %s: %s holds %s (key => value)\n", what, where, plural(len(got), "entry", "entries"))
	for _, e := range got {
		fmt.Printf("      %-12s => %s\n", e.key, e.value)
	}
	return nil
}

func (d *demo) get(path string) (string, int, error) {
	resp, err := http.Get(d.metricsURL + path)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), resp.StatusCode, err
}

func metricLines(body, name, node string) []string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, name+"{") && strings.Contains(l, `node="`+node+`"`) {
			out = append(out, l)
		}
	}
	return out
}

// prefixWriter indents the pipeline's output under the demo's narrative.
type prefixWriter string

func (p prefixWriter) Write(b []byte) (int, error) {
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line != "" {
			fmt.Fprint(os.Stdout, string(p)+line)
		}
	}
	return len(b), nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// verifyAudit stops the pipeline and checks its audit trail's hash chain
// with `pipeline audit verify`.
func (d *demo) verifyAudit(ctx context.Context) error {
	say("stopping the pipeline and verifying its audit trail (every change and decision, hash-chained)")
	d.stopPipeline()
	args := []string{"audit", "verify", d.audit}
	fmt.Printf("    $ pipeline %s\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, d.bin, args...)
	cmd.Stdout, cmd.Stderr = prefixWriter("    | "), prefixWriter("    | ")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("audit verify: %w", err)
	}
	fmt.Println("    edit, insert, delete or cut any line of it and verify names the first broken line (file:line) and what was done")
	return nil
}
