package configtest

import (
	"os"
	"testing"

	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
	logsink "github.com/pipeline/pipeline/sinks/log"
	"github.com/pipeline/pipeline/sources/static"
)

// testLoad loads a configuration of static sources and log sinks, the
// types these tests use.
func testLoad(paths, vars []string) Loaded {
	l := schema.NewLoader()
	cfg, diags := l.Load(paths, schema.Options{Vars: vars})
	out := Loaded{Files: l.Files(), Diags: diags}
	if cfg == nil || diags.HasErrors() {
		return out
	}
	out.Sensitive = cfg.Sensitive
	g, d := graph.Compile(cfg, node.NewRegistry(static.Spec(), logsink.Spec()))
	out.Graph, out.Diags = g, append(out.Diags, d...)
	return out
}

func writeFile(t *testing.T, path, src string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}
