package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// consoleShot is the web console step: a new pod's IP arrives, the page of
// the running job is opened in headless Chromium with that IP explained
// along the graph and the extract node selected, and a screenshot is
// written to .cache/demo/console.png (docs/console.png, tracked, is the
// documentation's picture: the demo leaves the tree clean). The pod is then
// deleted again and drained,
// so the next steps find the allow-list as before.
func (d *demo) consoleShot(ctx context.Context) error {
	const chromium = "/usr/bin/chromium"
	url := d.metricsURL + "/"
	say("the web console: open %s in a browser (pipeline console --against 127.0.0.1:19464)", url)
	if _, err := exec.LookPath(chromium); err != nil {
		fmt.Printf("    no Chromium at %s (apt-get install -y chromium), so no screenshot this time\n", chromium)
		return nil
	}
	const name, ip = "backend-4", "10.244.3.14"
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "backend"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}}}
	created, err := d.cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	created.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}}
	if _, err := d.cs.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return err
	}
	if err := d.expectMap(ctx, "pod "+name+" allowed", "10.244.1.11", ip); err != nil {
		return err
	}
	out := filepath.Join(".cache", "demo", "console.png")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if err := screenshot(ctx, chromium, url+"?key="+ip, out); err != nil {
		return fmt.Errorf("console screenshot: %w", err)
	}
	fmt.Printf("    wrote %s: the graph with each node's health and rates, %s explained along it, the extract node's details\n", out, ip)
	if err := d.cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return err
	}
	return d.expectMap(ctx, "pod "+name+" drained after the grace period", "10.244.1.11")
}

// screenshot loads url in headless Chromium, waits for the graph and the
// explain path, selects the extract node and writes a PNG to out.
func screenshot(ctx context.Context, chromium, url, out string) error {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.Headless, chromedp.DisableGPU, chromedp.WindowSize(1600, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(bctx, chromedp.Navigate(url)); err != nil {
		return err
	}
	wait := func(what, expr string) error {
		return waitFor(ctx, 15*time.Second, what, func() (bool, error) {
			return chromedp.Run(bctx, chromedp.Evaluate[bool](expr))
		})
	}
	if err := wait("the explain path drawn", `document.querySelectorAll('g.node.onpath').length >= 3 && !!document.querySelector('#explain h3')`); err != nil {
		return err
	}
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`g.node[data-kind="transform"] rect.box`))); err != nil {
		return err
	}
	if err := wait("the node's details", `document.querySelectorAll('#detail .plot').length === 4`); err != nil {
		return err
	}
	time.Sleep(2 * time.Second) // two more frames for the plots and rates; a picture, not a check
	png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	if err != nil {
		return err
	}
	return os.WriteFile(out, png, 0o644)
}
