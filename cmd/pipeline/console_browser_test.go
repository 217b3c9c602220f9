package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumPath is Debian's Chromium, which make test's set-up installs.
const chromiumPath = "/usr/bin/chromium"

// consolePipeline writes and runs files -> extract -> grace_period -> log
// + ebpf_map (a second log sink when not root: no bpffs), watching its
// configuration. It returns the admin address, the config file, the
// manifests directory and a function that stops the pipeline.
func consolePipeline(t *testing.T) (addr, cfg, manifests string, stop func()) {
	t.Helper()
	dir := t.TempDir()
	manifests = filepath.Join(dir, "manifests")
	confDir := filepath.Join(dir, "conf")
	for _, d := range []string{manifests, confDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeAtomic(t, filepath.Join(manifests, "pods.yaml"), podYAML("backend-1", "10.244.1.11")+"---\n"+podYAML("backend-2", "10.244.1.12"))
	second := `sink "log" "allowed" {
  input = transform.grace_period.drain
}`
	if os.Geteuid() == 0 {
		pin := fmt.Sprintf("/sys/fs/bpf/pipeline-console-test-%d-%d/allowed", os.Getpid(), time.Now().UnixNano())
		t.Cleanup(func() { _ = os.RemoveAll(filepath.Dir(pin)) })
		second = fmt.Sprintf(`sink "ebpf_map" "allowed" {
  input       = transform.grace_period.drain
  pin         = %q
  max_entries = 64
  key {
    type = "ipv4"
  }
  value {
    type = "u32"
    from = 1
  }
}`, pin)
	}
	cfg = filepath.Join(confDir, "main.hcl")
	writeAtomic(t, cfg, fmt.Sprintf(`source "files" "pods" {
  paths    = [%q]
  selector = "app=backend"
}

transform "extract" "pod_ips" {
  input = source.files.pods
  key   = object.status.podIP
  value = { pod = object.metadata.name }
}

transform "grace_period" "drain" {
  input = transform.extract.pod_ips
  delay = "30s"
}

sink "log" "changes" {
  input = transform.grace_period.drain
}

%s
`, filepath.Join(manifests, "*.yaml"), second))
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	var stderr bytes.Buffer
	go func() {
		done <- runPipeline(ctx, io.Discard, &stderr, []string{cfg}, runFlags{listen: "127.0.0.1:0", logFormat: "text",
			logLevel: "warn", reload: reloadFlags{watch: true, debounce: 50 * time.Millisecond}, onListen: func(a string) { addrc <- a }})
	}()
	select {
	case addr = <-addrc:
	case err := <-done:
		cancel()
		t.Fatalf("run ended early: %v\n%s", err, stderr.String())
	}
	client := &http.Client{Timeout: 5 * time.Second}
	waitReady(t, client, "http://"+addr+"/readyz")
	client.CloseIdleConnections()
	return addr, cfg, manifests, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v\n%s", err, stderr.String())
		}
	}
}

func podYAML(name, ip string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: shop\n  labels: {app: backend}\nstatus:\n  phase: Running\n  podIP: %s\n", name, ip)
}

func writeAtomic(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil { // one event, never a half-written file
		t.Fatal(err)
	}
}

// newBrowser starts headless Chromium; it skips the test when Chromium is
// not installed, and fails it under CI (make test's set-up installs it).
func newBrowser(t *testing.T) (context.Context, context.CancelFunc) {
	t.Helper()
	if _, err := exec.LookPath(chromiumPath); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no Chromium at %s: scripts/setup.sh installs chromium: %v", chromiumPath, err)
		}
		t.Skipf("no Chromium at %s (apt-get install -y chromium): %v", chromiumPath, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumPath), chromedp.NoSandbox,
		chromedp.Headless, chromedp.DisableGPU, chromedp.WindowSize(1600, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	return ctx, func() { cancelCtx(); cancelAlloc() }
}

// waitJS polls expr in the page until it is true or the deadline passes,
// and returns how long it took.
func waitJS(t *testing.T, ctx context.Context, what, expr string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if ok {
			return time.Since(start)
		}
		if time.Since(start) > within {
			html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("body")))
			t.Fatalf("%s: not within %s; page:\n%s", what, within, clipText(html, 6000))
		}
		time.Sleep(25 * time.Millisecond) // a polling interval, not an assertion
	}
}

func clipText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func nodeSel(addr string) string {
	return fmt.Sprintf(`document.querySelector('g.node[data-addr=%q]')`, addr)
}

// TestConsoleInBrowser loads the console of a running pipeline in
// Chromium: the graph is drawn, a changed file shows in the source's
// record count within 2 s, a key's explain path is drawn, and an invalid
// reload is listed as rejected with its diagnostic.
func TestConsoleInBrowser(t *testing.T) {
	addr, cfg, manifests, stop := consolePipeline(t)
	defer stop()
	ctx, cancel := newBrowser(t)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+addr+"/")); err != nil {
		t.Fatalf("load the console: %v", err)
	}

	// The graph: five nodes left to right, four edges (grace_period fans out to both sinks).
	waitJS(t, ctx, "five nodes and four edges drawn",
		`document.querySelectorAll('g.node').length === 5 && document.querySelectorAll('path.edge').length === 4`, 10*time.Second)
	cols, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`['source.files.pods','transform.extract.pod_ips','transform.grace_period.drain','sink.log.changes']
		.map(a => document.querySelector('g.node[data-addr="'+a+'"]').transform.baseVal[0].matrix.e)`))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(cols); i++ {
		if cols[i] <= cols[i-1] {
			t.Fatalf("nodes not laid out left to right: x = %v", cols)
		}
	}
	waitJS(t, ctx, "every node healthy with its records",
		`[...document.querySelectorAll('g.node')].every(g => g.dataset.state === 'healthy') && `+nodeSel("source.files.pods")+`.dataset.records === '2'`,
		10*time.Second)

	// Nothing was loaded from anywhere but the instance.
	waitJS(t, ctx, "every resource from the instance", `performance.getEntriesByType('resource').length > 0 &&
		performance.getEntriesByType('resource').every(e => e.name.startsWith(location.origin + '/'))`, time.Second)

	// A changed file reaches the page within 2 s.
	writeAtomic(t, filepath.Join(manifests, "more.yaml"), podYAML("backend-3", "10.244.2.13"))
	took := waitJS(t, ctx, "source record count 3 on the page", nodeSel("source.files.pods")+`.dataset.records === '3' && `+
		nodeSel("source.files.pods")+`.querySelector('text.records').textContent === '3 records'`, 2*time.Second)
	t.Logf("file change on the page after %s", took.Round(time.Millisecond))

	// A key's explain answer along the graph.
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#key"), "10.244.2.13"), chromedp.Click(chromedp.CSS("#keyform button"))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "explain path drawn", `['source.files.pods','transform.extract.pod_ips','transform.grace_period.drain','sink.log.changes']
		.every(a => document.querySelector('g.node[data-addr="'+a+'"]').classList.contains('onpath')) &&
		`+nodeSel("sink.log.changes")+`.dataset.explain === 'appended' &&
		document.querySelectorAll('path.edge.onpath').length >= 3 &&
		document.getElementById('explain').textContent.includes('backend-3')`, 5*time.Second)

	// A node's block as written, its history and its tap.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`g.node[data-addr="transform.extract.pod_ips"] rect.box`))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the node's block and plots shown", `(() => { const d = document.getElementById('detail');
		const pre = d.querySelector('pre.block');
		return !!pre && pre.textContent.startsWith('transform "extract" "pod_ips"') && d.querySelectorAll('.plot').length === 4 &&
			d.textContent.includes('main.hcl:6') })()`, 5*time.Second)
	writeAtomic(t, filepath.Join(manifests, "more.yaml"), podYAML("backend-3", "10.244.2.14"))
	waitJS(t, ctx, "the changed record in the node's tap", `[...document.querySelectorAll('#taplist li.upsert')].some(li => li.textContent.includes('10.244.2.14'))`,
		5*time.Second)
	if path := os.Getenv("PIPELINE_CONSOLE_SCREENSHOT"); path != "" {
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// An invalid reload is listed as rejected, with its diagnostic.
	good, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, cfg, strings.Replace(string(good), `delay = "30s"`, `delay = "soon"`, 1))
	waitJS(t, ctx, "the rejected reload listed", `(() => { const li = document.querySelector('#reloadlist li[data-result="rejected"]');
		return !!li && li.textContent.includes('main.hcl:') })()`, 15*time.Second)
	ready, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#ready")))
	if err != nil {
		t.Fatal(err)
	}
	if ready != "ready" {
		t.Errorf("after a rejected reload the page says %q, want ready (the running graph goes on)", ready)
	}
}
