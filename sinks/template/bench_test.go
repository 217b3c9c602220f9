package template

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	gotemplate "text/template"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/internal/atomicfile"
	"github.com/pipeline/pipeline/internal/haproxy"
)

// benchBackends is the size of the T1 row's configuration.
const benchBackends = 10000

// benchHead is the HAProxy configuration before the servers, the same
// for the sink's template and the floor's.
const benchHead = `global
  maxconn 100000
defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind 127.0.0.1:8080
  default_backend be
backend be
  balance roundrobin
`

const benchTmpl = "template = <<-EOT\n" + benchHead + `%{ for r in records ~}
  server ${r.key} ${r.value.ip}:${r.value.port} check
%{ endfor ~}
EOT
`

const floorTmpl = benchHead + `{{range .}}  server {{.Name}} {{.IP}}:{{.Port}} check
{{end}}`

type backend struct {
	Name, IP string
	Port     int
}

func benchBackend(i int) backend {
	return backend{Name: fmt.Sprintf("web-%05d", i), IP: fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255), Port: 8080}
}

// BenchmarkFloor10k is T1's floor: Go's text/template over a pre-built
// slice of 10,000 backends into a buffer, written to a temporary file and
// renamed over
// the configuration. One backend's port changes each time, so each
// iteration writes a new file.
func BenchmarkFloor10k(b *testing.B) { floor10k(b, false) }

// BenchmarkFloorSynced10k is the floor with the durability the sink
// gives: the temporary file and the directory are synced, as by the sink.
func BenchmarkFloorSynced10k(b *testing.B) { floor10k(b, true) }

func writeSynced(path string, data []byte, sync bool) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// floorRun is the floor's state: its template, its slice and its file.
type floorRun struct {
	tmpl     *gotemplate.Template
	backends []backend
	dir      string
	path     string
	buf      bytes.Buffer
	sync     bool
}

func newFloor(b *testing.B, sync bool) *floorRun {
	f := &floorRun{sync: sync, dir: b.TempDir()}
	f.path = filepath.Join(f.dir, "haproxy.cfg")
	f.tmpl = gotemplate.Must(gotemplate.New("cfg").Parse(floorTmpl))
	f.backends = make([]backend, benchBackends)
	for i := range f.backends {
		f.backends[i] = benchBackend(i)
	}
	return f
}

// run renders and writes the floor's file with backend 0 on port 8080+i%2.
func (f *floorRun) run(b *testing.B, i int) {
	f.backends[0].Port = 8080 + i%2
	f.buf.Reset()
	if err := f.tmpl.Execute(&f.buf, f.backends); err != nil {
		b.Fatal(err)
	}
	if err := writeSynced(f.path+".tmp", f.buf.Bytes(), f.sync); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(f.path+".tmp", f.path); err != nil {
		b.Fatal(err)
	}
	if f.sync {
		if err := atomicfile.SyncDir(f.dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkT1 times the floor (synced) and the target in turn, in one
// process, so that both meet the same conditions; it reports each one's
// time per write (floor-ms, target-ms) and floor-nosync-ms.
func BenchmarkT1(b *testing.B) {
	synced, unsynced, t := newFloor(b, true), newFloor(b, false), newRenderTarget(b)
	var floor, nosync, target time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		synced.run(b, i)
		floor += time.Since(start)
		start = time.Now()
		unsynced.run(b, i)
		nosync += time.Since(start)
		start = time.Now()
		t.change(i)
		target += time.Since(start)
	}
	n := float64(b.N) * 1e6
	b.ReportMetric(float64(floor)/n, "floor-ms")
	b.ReportMetric(float64(nosync)/n, "floor-nosync-ms")
	b.ReportMetric(float64(target)/n, "target-ms")
}

func floor10k(b *testing.B, sync bool) {
	f := newFloor(b, sync)
	for i := 0; b.Loop(); i++ {
		f.run(b, i)
	}
}

// BenchmarkRender10k is T1: the template target holding 10,000 backends
// renders them after one changed, compares the bytes with the file on
// disk and writes it atomically (temporary file, fsync, rename, fsync of
// the directory).
func BenchmarkRender10k(b *testing.B) {
	t := newRenderTarget(b)
	for i := 0; b.Loop(); i++ {
		t.change(i)
	}
}

// renderTarget is a template target holding 10,000 backends.
type renderTarget struct{ t *Target }

func newRenderTarget(b *testing.B) renderTarget {
	dir := b.TempDir()
	path := filepath.Join(dir, "haproxy.cfg")
	s := nodetest.MustBuild(b, Spec(), fmt.Sprintf("input = source.static.x\npath = %q\n%s", path, benchTmpl), up).Sink.(*Sink)
	env, _ := nodetest.Env(b, nil)
	env.Logger = discardLogger()
	tg, err := s.Open(context.Background(), env, node.ModeRun)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tg.Close() })
	t := tg.(*Target)
	batch := make([]node.Entry, benchBackends)
	for i := range batch {
		be := benchBackend(i)
		batch[i] = node.Entry{Key: node.Key(be.Name), Value: cty.ObjectVal(map[string]cty.Value{"ip": cty.StringVal(be.IP), "port": cty.NumberIntVal(int64(be.Port))})}
	}
	t.Update(context.Background(), batch)
	if w := t.Commit(context.Background(), full); len(w) != 1 {
		b.Fatalf("first render wrote %v", w)
	}
	return renderTarget{t}
}

// change sets backend 0's port to 8081-i%2 and ends the round: one render,
// compare and atomic write.
func (r renderTarget) change(i int) {
	be := benchBackend(0)
	r.t.Update(context.Background(), []node.Entry{{Key: node.Key(be.Name), Value: cty.ObjectVal(map[string]cty.Value{"ip": cty.StringVal(be.IP), "port": cty.NumberIntVal(int64(8081 - i%2))})}})
	r.t.Commit(context.Background(), synced)
}

// exampleRoutes is the size of T3: examples/haproxy at 3,000 routes.
const exampleRoutes = 3000

// BenchmarkExampleRender3000 is T3: examples/haproxy's template (its
// variables given as literals) over 3,000 routes, each a backend of three
// endpoints, rendered, compared and written atomically after one
// endpoint's port changed. The template groups the records by backend in
// one pass, so a render is linear in the records; the passes of its
// loops that did not change are reused (cache.go). It reports the render
// alone as render-ms, and the process's CPU time per change as cpu-ms.
func BenchmarkExampleRender3000(b *testing.B) {
	t := newExampleTarget(b, exampleRoutes)
	var render time.Duration
	cpu := cpuTime(b)
	for i := 0; b.Loop(); i++ {
		// A rollout of one endpoint: its port moves, so its record goes
		// and another comes.
		old, next := exampleEndpoint(0, 0, 8080+i%2), exampleEndpoint(0, 0, 8081-i%2)
		t.Delete(context.Background(), []node.Entry{old})
		t.Update(context.Background(), []node.Entry{next})
		start := time.Now()
		if _, err := t.rendered(); err != nil {
			b.Fatal(err)
		}
		render += time.Since(start)
		if w := t.Commit(context.Background(), synced); len(w) != 1 || w[0].Err != nil {
			b.Fatalf("render %d wrote %v", i, w)
		}
	}
	b.ReportMetric(float64(render)/float64(b.N)/1e6, "render-ms")
	b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N)/1e6, "cpu-ms")
}

// BenchmarkExampleRuntimeDiff3000 is what a runtime update computes
// before it talks to HAProxy, at T3's size: the file examples/haproxy
// renders at 3,000 routes after one endpoint's port changed, parsed and
// compared with the parsed file HAProxy runs. It reports the process's
// CPU time per comparison as cpu-ms.
func BenchmarkExampleRuntimeDiff3000(b *testing.B) {
	t := newExampleTarget(b, exampleRoutes)
	running := haproxy.Parse(t.disk.data)
	t.Delete(context.Background(), []node.Entry{exampleEndpoint(0, 0, 8080)})
	t.Update(context.Background(), []node.Entry{exampleEndpoint(0, 0, 8081)})
	rend, err := t.rendered()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(rend.data)))
	cpu := cpuTime(b)
	for b.Loop() {
		if u := haproxy.DiffConfigs(running, haproxy.Parse(rend.data)); len(u.Ops) != 2 {
			b.Fatalf("%s %s", u.Describe(), u.Reload)
		}
	}
	b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N)/1e6, "cpu-ms")
}

// cpuTime is the CPU time the process used so far (user and system, all
// threads: the garbage collector's too), which a loaded machine changes
// less than the time on the clock.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// exampleTemplate is examples/haproxy's template, its variables given as
// literals.
func exampleTemplate(tb testing.TB) string {
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", "haproxy", "haproxy.cfg.tmpl"))
	if err != nil {
		tb.Fatal(err)
	}
	return strings.NewReplacer("${var.namespace}", "shop", "${var.listen}", "127.0.0.1:8080",
		"${var.runtime_socket}", "/run/haproxy/admin.sock").Replace(string(src))
}

// newExampleTarget is a template target of examples/haproxy's template
// holding routes routes, each a backend of three endpoints, rendered.
func newExampleTarget(b *testing.B, routes int) *Target {
	path := filepath.Join(b.TempDir(), "haproxy.cfg")
	s := nodetest.MustBuild(b, Spec(), fmt.Sprintf("input = source.static.x\npath = %q\ntemplate = <<-EOT\n%sEOT\n", path, exampleTemplate(b)), up).Sink.(*Sink)
	env, _ := nodetest.Env(b, nil)
	env.Logger = discardLogger()
	tg, err := s.Open(context.Background(), env, node.ModeRun)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tg.Close() })
	t := tg.(*Target)
	t.Update(context.Background(), exampleRecords(routes))
	if w := t.Commit(context.Background(), full); len(w) != 1 || w[0].Err != nil {
		b.Fatalf("first render wrote %v", w)
	}
	return t
}

// exampleRecords are routes routes as examples/haproxy's transforms make
// them, each a backend of three endpoints.
func exampleRecords(routes int) []node.Entry {
	var batch []node.Entry
	for i := range routes {
		batch = append(batch, exampleRoute(i, fmt.Sprintf("h%04d.example", i), ""))
		for j := range 3 {
			batch = append(batch, exampleEndpoint(i, j, 8080))
		}
	}
	return batch
}

func exampleRoute(i int, host, snippet string) node.Entry {
	return node.Entry{Key: node.Key(fmt.Sprintf("route/ing-%04d/0", i)), Value: cty.ObjectVal(map[string]cty.Value{
		"kind": cty.StringVal("route"), "host": cty.StringVal(host), "path": cty.StringVal("/"),
		"backend": cty.StringVal(fmt.Sprintf("shop_svc-%04d", i)), "snippet": cty.StringVal(snippet)})}
}

func exampleEndpoint(i, j, port int) node.Entry {
	addr := fmt.Sprintf("10.%d.%d.%d", i>>8, i&255, j+1)
	return node.Entry{Key: node.Key(fmt.Sprintf("endpoint/svc-%04d/%s:%d", i, addr, port)), Value: cty.ObjectVal(map[string]cty.Value{
		"kind": cty.StringVal("endpoint"), "backend": cty.StringVal(fmt.Sprintf("shop_svc-%04d", i)), "name": cty.StringVal(fmt.Sprintf("svc-%04d-%d", i, j)),
		"address": cty.StringVal(addr), "port": cty.NumberIntVal(int64(port))})}
}
