package template

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/internal/backendtest"
	"github.com/pipeline/pipeline/internal/haproxytest"
)

// runtimeTmpl renders HAProxy's file with its runtime socket: backend be
// has a server per record whose kind is "server", and a record of kind
// "backend" adds a backend of its own.
const runtimeTmpl = `template = <<-EOT
global
  stats socket DIR/admin.sock level admin
defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind LISTEN
  default_backend be
backend be
%{ for r in records ~}
%{ if r.value.kind == "server" ~}
  server ${replace(r.key, "/", "-")} ${r.value.ip}:${r.value.port}
%{ endif ~}
%{ endfor ~}
%{ for r in records ~}
%{ if r.value.kind == "backend" ~}
backend ${r.key}
  server only ${r.value.ip}:${r.value.port}
%{ endif ~}
%{ endfor ~}
EOT
check_command   = ["haproxy", "-c", "-q", "-f", "{{path}}"]
reload_signal   = "SIGUSR2"
pid_file        = "DIR/haproxy.pid"
reload_interval = "0s"
runtime "haproxy" {
  socket  = "DIR/admin.sock"
  timeout = "2s"
}
`

// TestRuntimeUpdateHAProxy: a real HAProxy runs the file. A server's
// port change is a runtime update (the same worker serves the new port,
// no reload, the file holds the change), a new backend is checked,
// swapped and reloaded, and a change the socket cannot take (it is gone)
// falls back to a reload; explain, the audit and the metrics say which.
func TestRuntimeUpdateHAProxy(t *testing.T) {
	haproxy := haproxytest.Binary(t)
	ports, stop, err := backendtest.Serve("127.0.0.1", "blue", "green")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := l.Addr().String()
	l.Close()
	f := open(t, strings.ReplaceAll(runtimeTmpl, "LISTEN", listen))
	var dec decisions
	f.tg.env.Decisions = dec.Decide
	dir := filepath.Dir(f.path)
	pidFile := filepath.Join(dir, "haproxy.pid")
	// HAProxy runs first, on a file with its socket and no backend.
	placeholder := fmt.Sprintf("global\n  stats socket %s/admin.sock level admin\ndefaults\n  mode http\n  timeout connect 1s\n  timeout client 5s\n  timeout server 5s\nfrontend fe\n  bind %s\n", dir, listen)
	if err := os.WriteFile(f.path, []byte(placeholder), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(haproxy, "-W", "-D", "-q", "-f", f.path, "-p", pidFile).CombinedOutput(); err != nil {
		t.Fatalf("start haproxy: %v\n%s", err, out)
	}
	master := readPid(t, pidFile)
	t.Cleanup(func() { _ = syscall.Kill(master, syscall.SIGTERM) })
	before := waitChildren(t, master, "", 10*time.Second)
	// HAProxy 2.6 ignores a SIGUSR2 while its first worker starts: the
	// first render comes once the placeholder answers (a 503).
	answering(t, listen)

	web := func(port int) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{"kind": cty.StringVal("server"), "ip": cty.StringVal("127.0.0.1"), "port": cty.NumberIntVal(int64(port))})
	}
	// The first render replaces the placeholder: a reload.
	f.put("web/1", web(ports[0]), full)
	// The master may still miss that first SIGUSR2 (its worker answers a
	// moment before the master takes signals again): it is sent again
	// here until a new worker runs, as this test is about what follows.
	for i := 0; waitChildren(t, master, before, 2*time.Second) == before; i++ {
		if i == 5 {
			t.Fatalf("HAProxy's worker is still %s after the first reload", before)
		}
		_ = syscall.Kill(master, syscall.SIGUSR2)
	}
	worker := newWorker(t, master, before)
	served(t, listen, "blue")
	if got := f.count("pipeline_sink_template_reloads_total", "result", "ok"); got != 1 {
		t.Fatalf("reloads %v after the first render, want 1", got)
	}
	time.Sleep(1100 * time.Millisecond) // a runtime update waits 1s after a reload

	// A port change: a runtime update, the same worker.
	f.put("web/1", web(ports[1]), synced)
	served(t, listen, "green")
	if got := f.count("pipeline_sink_template_runtime_updates_total", "result", "ok"); got != 1 {
		t.Errorf("runtime updates %v, want 1", got)
	}
	if got := f.count("pipeline_sink_template_reloads_total", "result", "ok"); got != 1 {
		t.Errorf("reloads %v after a runtime update, want still 1", got)
	}
	if now := waitChildren(t, master, "", time.Second); now != worker {
		// The reload's old worker is gone (newWorker): only a new one would differ.
		t.Errorf("workers %q after a runtime update, want %q", now, worker)
	}
	if !strings.Contains(f.file(), fmt.Sprintf("server web-1 127.0.0.1:%d\n", ports[1])) {
		t.Errorf("the file does not hold the change:\n%s", f.file())
	}
	if got := strings.Join(f.tg.Explain("web/1"), "\n"); !strings.Contains(got, "the key's last change: runtime update, no reload at ") ||
		!strings.Contains(got, fmt.Sprintf("be/web-1 addr 127.0.0.1:%d", ports[1])) {
		t.Errorf("explain says:\n%s", got)
	}
	last := dec.list[len(dec.list)-1]
	if last.Attrs["via"] != "runtime" || last.Attrs["reload"] != "none" || last.Attrs["check"] != "none" {
		t.Errorf("decision %+v, want a runtime update", last)
	}

	// A new backend: check, swap and reload.
	time.Sleep(1100 * time.Millisecond)
	f.put("extra", cty.ObjectVal(map[string]cty.Value{"kind": cty.StringVal("backend"), "ip": cty.StringVal("127.0.0.1"), "port": cty.NumberIntVal(int64(ports[0]))}), synced)
	if got := f.count("pipeline_sink_template_reloads_total", "result", "ok"); got != 2 {
		t.Errorf("reloads %v after a new backend, want 2", got)
	}
	if got := strings.Join(f.tg.Explain("extra"), "\n"); !strings.Contains(got, "check, swap and reload at ") || !strings.Contains(got, "backend extra added") {
		t.Errorf("explain says:\n%s", got)
	}
	last = dec.list[len(dec.list)-1]
	if last.Attrs["via"] != "reload" || !strings.Contains(last.Attrs["reason"], "backend extra added") {
		t.Errorf("decision %+v, want a reload because of the new backend", last)
	}
	worker = newWorker(t, master, worker)

	// The socket is gone: the runtime update fails, the change reloads.
	time.Sleep(1100 * time.Millisecond)
	if err := os.Rename(filepath.Join(dir, "admin.sock"), filepath.Join(dir, "moved.sock")); err != nil {
		t.Fatal(err)
	}
	f.put("web/1", web(ports[0]), synced)
	if got := f.count("pipeline_sink_template_runtime_updates_total", "result", "fallback"); got != 1 {
		t.Errorf("fallbacks %v, want 1", got)
	}
	if got := f.count("pipeline_sink_template_reloads_total", "result", "ok"); got != 3 {
		t.Errorf("reloads %v after a fallback, want 3", got)
	}
	newWorker(t, master, worker)
	served(t, listen, "blue")
	if got := strings.Join(f.tg.Explain("web/1"), "\n"); !strings.Contains(got, "the runtime update failed") {
		t.Errorf("explain says:\n%s", got)
	}

	// plan heads the diff with the way the change would go.
	extra := f.tg.entries["extra"]
	for _, tt := range []struct {
		desired []node.Entry
		want    string
	}{
		{[]node.Entry{{Key: "web/1", Value: web(ports[1])}, extra}, fmt.Sprintf("# runtime update, no check, no reload (if HAProxy runs the file on disk): be/web-1 addr 127.0.0.1:%d\n", ports[1])},
		{[]node.Entry{{Key: "web/1", Value: web(ports[0])}}, "# check, swap and reload: backend extra removed\n"},
	} {
		fp, err := f.tg.PlanFile(context.Background(), tt.desired)
		if err != nil || !strings.HasPrefix(fp.Diff, tt.want) {
			t.Errorf("plan: %v\n%s\nwant it to start with %q", err, fp.Diff, tt.want)
		}
	}
}

// newWorker waits until HAProxy's master has one worker, not old, and
// returns it: a reload's old worker may finish its connections a while.
func newWorker(t *testing.T, master int, old string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		now := waitChildren(t, master, old, time.Second)
		if now != old && !strings.Contains(now, " ") {
			return now
		}
		if time.Now().After(deadline) {
			t.Fatalf("HAProxy's workers are %q 10s after a reload from %q", now, old)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// answering waits until HAProxy answers on listen, whatever it answers.
func answering(t *testing.T, listen string) {
	t.Helper()
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := c.Get("http://" + listen + "/")
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("HAProxy does not answer on %s after 10s: %v", listen, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// served waits until requests through HAProxy are answered by want.
func served(t *testing.T, listen, want string) {
	t.Helper()
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.Now().Add(10 * time.Second)
	last := ""
	for {
		if resp, err := c.Get("http://" + listen + "/"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if last = string(b); last == want {
				return
			}
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			t.Fatalf("HAProxy does not answer %s after 10s: last %q", want, last)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The runtime block's program and timeout are checked.
func TestRuntimeBlockErrors(t *testing.T) {
	for _, tt := range []struct{ body, want string }{
		{`runtime "nginx" { socket = "/run/x.sock" }`, "Unknown runtime program"},
		{"runtime \"haproxy\" {\n  socket = \"/run/x.sock\"\n  timeout = \"0s\"\n}", "Invalid timeout"},
		{`runtime "haproxy" {}`, "socket"},
	} {
		_, diags := nodetest.Build(t, Spec(), "input = source.static.x\npath = \"/tmp/x\"\ntemplate = \"x\"\n"+tt.body, up)
		if !strings.Contains(diags.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.body, diags, tt.want)
		}
	}
}
