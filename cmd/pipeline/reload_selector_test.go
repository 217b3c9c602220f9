package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/engine/graph"
)

// selectorConfig renders the names of the objects a source selects into
// out.txt. SOURCE is the source's block without its closing brace, and
// SELECTOR its selector: an attribute or a block.
const selectorConfig = `
SOURCE
  SELECTOR
}
transform "extract" "names" {
  input = ADDR
  key   = object.metadata.name
}
sink "template" "out" {
  input    = transform.extract.names
  path     = "OUT"
  template = "%{ for r in records }${r.key}\n%{ endfor }"
}
`

// checkSelectorReload runs a pipeline whose source (addr, declared by
// source) selects by label, edits its selector twice, as an attribute then
// as a block, and checks that each reload rebuilds the source, naming the
// selector, and that the rendered names follow the new selector. The
// objects web (app=web) and db (app=db) must exist.
func checkSelectorReload(t *testing.T, dir, source, addr string) {
	t.Helper()
	out := filepath.Join(dir, "out.txt")
	config := func(selector string) string {
		return strings.NewReplacer("SOURCE", source, "SELECTOR", selector, "ADDR", addr, "OUT", out).Replace(selectorConfig)
	}
	rendered := func(want string) {
		t.Helper()
		eventually(t, "out.txt holds "+strings.ReplaceAll(want, "\n", " "), func() bool {
			b, _ := os.ReadFile(out)
			return string(b) == want
		})
	}
	cfg := filepath.Join(dir, "p.hcl")
	saveFile(t, cfg, config(`selector = "app=web"`))
	w := runWatched(t, cfg)
	rendered("web\n")

	edits := []struct{ selector, want string }{
		{`selector = "app=db"`, "db\n"},
		{"selector {\n    key      = \"app\"\n    operator = \"in\"\n    values   = [\"web\", \"db\"]\n  }", "db\nweb\n"},
	}
	for i, e := range edits {
		saveFile(t, cfg, config(e.selector))
		rec := w.settle(t, i+1)[0]
		if rec.Result != engine.ReloadApplied {
			t.Fatalf("reload %d: %s: %s", i+1, rec.Result, rec.Error)
		}
		var got graph.NodeDiff
		for _, n := range rec.Nodes {
			if n.Address == addr {
				got = n
			}
		}
		if got.Action != graph.Rebuilt || !slices.Contains(got.Changed, "selector") {
			t.Errorf("reload %d: %s %s (changed %v), want rebuilt naming selector", i+1, addr, got.Action, got.Changed)
		}
		rendered(e.want)
	}
}

// TestReloadFilesSelector: editing the selector of a running files source
// rebuilds it, and the new selector decides what it emits.
func TestReloadFilesSelector(t *testing.T) {
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "objs"), 0o755))
	for _, name := range []string{"web", "db"} {
		saveFile(t, filepath.Join(dir, "objs", name+".yaml"),
			"apiVersion: v1\nkind: Pod\nmetadata:\n  name: "+name+"\n  namespace: shop\n  labels:\n    app: "+name+"\n")
	}
	checkSelectorReload(t, dir, "source \"files\" \"objs\" {\n  paths = [\"objs/*.yaml\"]", "source.files.objs")
}
