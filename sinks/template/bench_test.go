package template

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	gotemplate "text/template"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

// benchBackends is the size of the T1 row's configuration.
const benchBackends = 10000

const benchTmpl = `template = <<-EOT
global
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
%{ for r in records ~}
  server ${r.key} ${r.value.ip}:${r.value.port} check
%{ endfor ~}
EOT
`

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

func floor10k(b *testing.B, sync bool) {
	tmpl := gotemplate.Must(gotemplate.New("cfg").Parse(`global
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
{{range .}}  server {{.Name}} {{.IP}}:{{.Port}} check
{{end}}`))
	backends := make([]backend, benchBackends)
	for i := range backends {
		backends[i] = benchBackend(i)
	}
	dir := b.TempDir()
	path := filepath.Join(dir, "haproxy.cfg")
	var buf bytes.Buffer
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		backends[0].Port = 8080 + i%2
		buf.Reset()
		if err := tmpl.Execute(&buf, backends); err != nil {
			b.Fatal(err)
		}
		if err := writeSynced(path+".tmp", buf.Bytes(), sync); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			b.Fatal(err)
		}
		if sync {
			if err := syncDir(dir); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkRender10k is T1: the template target holding 10,000 backends
// renders them after one changed, compares the bytes with the file on
// disk and writes it atomically (temporary file, fsync, rename, fsync of
// the directory).
func BenchmarkRender10k(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "haproxy.cfg")
	s := nodetest.MustBuild(b, Spec(), fmt.Sprintf("input = source.static.x\npath = %q\n%s", path, benchTmpl), up).Sink.(*Sink)
	env, _ := nodetest.Env(b, nil)
	env.Logger = discardLogger()
	tg, err := s.Open(context.Background(), env, node.ModeRun)
	if err != nil {
		b.Fatal(err)
	}
	defer tg.Close()
	t := tg.(*Target)
	batch := make([]node.Entry, benchBackends)
	for i := range batch {
		be := benchBackend(i)
		batch[i] = node.Entry{Key: node.Key(be.Name), Value: cty.ObjectVal(map[string]cty.Value{"ip": cty.StringVal(be.IP), "port": cty.NumberIntVal(int64(be.Port))})}
	}
	ctx := context.Background()
	t.Update(ctx, batch)
	t.Commit(ctx, full)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		be := benchBackend(0)
		t.Update(ctx, []node.Entry{{Key: node.Key(be.Name), Value: cty.ObjectVal(map[string]cty.Value{"ip": cty.StringVal(be.IP), "port": cty.NumberIntVal(int64(8081 - i%2))})}})
		t.Commit(ctx, synced)
	}
	b.StopTimer()
	if n := t.met.renders.WithLabelValues("written"); n == nil {
		b.Fatal("no metric")
	}
}
