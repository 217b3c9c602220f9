//go:build integration

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipeline/pipeline/engine"
	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/plan"
	"github.com/pipeline/pipeline/schema"
	"github.com/pipeline/pipeline/sinks/template"
	"github.com/pipeline/pipeline/sources/files"
)

// TestBrakeTemplate: a proxy's backends rendered from a JSON file; the
// file rewritten to [] leaves the render as it was (the removed records
// are deletes the brake holds), and backends coming back within the limit
// render without the ones still gone. Restarted with the input emptied
// while it was down, the sink holds the deletes again (the state file
// beside the rendered file says which entries it holds), in plan as in
// run, until max_deletes is raised.
func TestBrakeTemplate(t *testing.T) {
	dir := t.TempDir()
	data, out := filepath.Join(dir, "backends.json"), filepath.Join(dir, "backends.cfg")
	write := func(n int) {
		t.Helper()
		items := make([]string, n)
		for i := range items {
			items[i] = fmt.Sprintf(`{"ip": "10.0.2.%d"}`, i+1)
		}
		if err := os.WriteFile(data+".tmp", []byte("["+strings.Join(items, ",")+"]"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(data+".tmp", data); err != nil {
			t.Fatal(err)
		}
	}
	lines := func() int {
		b, err := os.ReadFile(out)
		if err != nil {
			return -1
		}
		return strings.Count(string(b), "server ")
	}
	reg := node.NewRegistry(files.Spec(), template.Spec())
	// config is the configuration with extra in the sink's block, whose
	// template is the one given inline unless extra gives a template_file.
	config := func(extra string) string {
		if !strings.Contains(extra, "template_file") {
			extra = `template = "%{ for r in records }server ${r.key}\n%{ endfor }"` + "\n  " + extra
		}
		return fmt.Sprintf(`
source "files" "backends" {
  paths  = [%q]
  format = "json"
  key    = item.ip
}
sink "template" "proxy" {
  input    = source.files.backends
  path     = %q
  %s
}
`, data, out, extra)
	}
	tmpl := filepath.Join(dir, "backends.tmpl")
	if err := os.WriteFile(tmpl, []byte("# backends\n%{ for r in records }server ${r.key}\n%{ endfor }"), 0o644); err != nil {
		t.Fatal(err)
	}
	write(30)
	r := startWith(t, config(""), reg)
	r.waitReady(t)
	eventually(t, 10*time.Second, "30 backends rendered", func() bool { return lines() == 30 })

	write(0)
	eventually(t, 10*time.Second, "deletes held", func() bool {
		return strings.Contains(fmt.Sprint(r.rt.Readiness()), "30 deletes held by the deletion brake")
	})
	if n := lines(); n != 30 {
		t.Fatalf("the render holds %d backends while the brake holds their removal, want 30", n)
	}
	if v := gaugeValue(r, "pipeline_sink_deletes_held", "sink.template.proxy"); v != 30 {
		t.Fatalf("pipeline_sink_deletes_held = %v, want 30", v)
	}

	write(25) // 5 gone: within the brake's floor
	eventually(t, 10*time.Second, "25 backends rendered", func() bool { return lines() == 25 })
	r.waitReady(t)

	// The input emptied while pipeline is down: the restarted sink knows
	// the file's 25 entries from its state file, and the brake holds their
	// deletes, in plan as in run.
	r.stop()
	write(0)
	before, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Plan(context.Background(), compile(t, config(""), reg), plan.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sp := p.Sinks[0]; sp.DeletesBraked != 25 || sp.File == nil || sp.File.Changed || !strings.Contains(sp.Brake, "max_deletes = 50%") {
		t.Fatalf("plan after the restart: %d deletes held (%q), file %+v; want 25 held and the file unchanged", sp.DeletesBraked, sp.Brake, sp.File)
	}
	r = startWith(t, config(""), reg)
	eventually(t, 10*time.Second, "deletes held after the restart", func() bool {
		return strings.Contains(fmt.Sprint(r.rt.Readiness()), "25 deletes held by the deletion brake")
	})
	if n := lines(); n != 25 {
		t.Fatalf("the render holds %d backends after the restart, want the 25 whose removal is held", n)
	}
	if after, err := os.Stat(out); err != nil || !os.SameFile(before, after) {
		t.Fatalf("the file was written again after the restart (%v): it is already the render of what the sink holds", err)
	}
	if v := gaugeValue(r, "pipeline_sink_deletes_held", "sink.template.proxy"); v != 25 {
		t.Fatalf("pipeline_sink_deletes_held = %v after the restart, want 25", v)
	}

	// A hot reload that rebuilds the sink for another reason (its
	// template) holds them again: the new target reads the state file
	// the old one wrote.
	rec := r.rt.Reload(context.Background(), compile(t, config(fmt.Sprintf("template_file = %q", tmpl)), reg), engine.ReloadRecord{Trigger: "test"}, 30*time.Second)
	if rec.Result != engine.ReloadApplied {
		t.Fatalf("reload: %s %s", rec.Result, rec.Error)
	}
	eventually(t, 10*time.Second, "the file rendered with the new template", func() bool {
		b, _ := os.ReadFile(out)
		return strings.HasPrefix(string(b), "# backends\n")
	})
	if n := lines(); n != 25 || !strings.Contains(fmt.Sprint(r.rt.Readiness()), "25 deletes held by the deletion brake") {
		t.Fatalf("after a reload: %d backends rendered, readiness %v; want 25 and their deletes held", n, r.rt.Readiness())
	}

	// Released by raising max_deletes (a hot reload rebuilds the sink).
	rec = r.rt.Reload(context.Background(), compile(t, config(`max_deletes = "100%"`), reg), engine.ReloadRecord{Trigger: "test"}, 30*time.Second)
	if rec.Result != engine.ReloadApplied {
		t.Fatalf("reload: %s %s", rec.Result, rec.Error)
	}
	eventually(t, 10*time.Second, "the deletes applied", func() bool { return lines() == 0 })
	r.waitReady(t)
}

func compile(t *testing.T, src string, reg *node.Registry) *graph.Graph {
	t.Helper()
	cfg, diags := schema.NewLoader().ParseSource(t.TempDir()+"/e2e.hcl", []byte(src), schema.Options{Environ: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	g, diags := graph.Compile(cfg, reg)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return g
}
