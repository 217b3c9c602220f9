package template

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// Plan shows a unified diff of the file with secrets masked, writes
// nothing, runs nothing, and says so when the file would not change.
func TestPlanFile(t *testing.T) {
	f := open(t, `template = "%{ for r in records }${r.key} ${r.value.pw}\n%{ endfor }"`+"\n"+`check_command = ["false"]`)
	plan, err := f.tg.s.Open(context.Background(), node.Env{}, node.ModePlan)
	if err != nil {
		t.Fatal(err)
	}
	defer plan.Close()
	fp := plan.(node.Document)
	secret := cty.ObjectVal(map[string]cty.Value{"pw": schema.MarkSensitive(cty.StringVal("hunter2"))})
	got, err := fp.PlanFile(context.Background(), []node.Entry{{Key: "a", Value: secret}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Exists || !got.Changed || !strings.Contains(got.Diff, "+a "+schema.Mask) || strings.Contains(got.Diff, "hunter2") {
		t.Errorf("plan of a missing file: %+v", got)
	}
	if _, err := os.Stat(f.path); !os.IsNotExist(err) {
		t.Error("plan wrote the file")
	}
	if err := os.WriteFile(f.path, []byte("a hunter2\nb x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, _ = fp.PlanFile(context.Background(), []node.Entry{{Key: "a", Value: secret}})
	if !got.Changed || !strings.Contains(got.Diff, "-b x") || strings.Contains(got.Diff, "hunter2") {
		t.Errorf("plan of a changed file: %+v", got)
	}
	_ = os.WriteFile(f.path, []byte("a hunter2\n"), 0o644)
	got, _ = fp.PlanFile(context.Background(), []node.Entry{{Key: "a", Value: secret}})
	if got.Changed || got.Diff != "" {
		t.Errorf("plan of an equal file: %+v", got)
	}
}

// Explain lists the lines a key produced, and why the file is not written.
func TestExplainLines(t *testing.T) {
	f := open(t, serversTmpl)
	f.put("web-a", server("10.0.0.1", 80), node.Round{})
	f.put("web-b", server("10.0.0.2", 80), full)
	got := f.tg.Explain("web-b")
	if len(got) != 1 || !strings.HasSuffix(got[0], ":3:   server web-b 10.0.0.2:80") {
		t.Errorf("explain web-b: %q", got)
	}
	if got := f.tg.Explain("nope"); len(got) != 0 {
		t.Errorf("explain of an unknown key: %q", got)
	}
	_ = os.RemoveAll(f.path[:strings.LastIndex(f.path, "/")])
	batch := []node.Entry{{Key: "web-c", Value: server("10.0.0.3", 80)}}
	if err := f.round(batch, synced)["web-c"]; err == nil || !strings.Contains(err.Error(), "no such file or directory") {
		t.Errorf("the entry of a failing write: %v, want its error", err)
	}
	// Why it failed is the entry's error, shown once; explain says
	// where its lines would be, and that the file does not hold them.
	if got := f.tg.Explain("web-c"); len(got) != 1 || !strings.Contains(got[0], "(rendered, not in the file):4:   server web-c") {
		t.Errorf("explain with a failing write: %q", got)
	}
}

// Plan of a large file shows its sizes instead of a diff, whose matching
// would grow with the product of the two sides' lines.
func TestPlanLargeFileNoDiff(t *testing.T) {
	f := open(t, `template = "%{ for a in records }%{ for b in records }${a.key}-${b.key}\n%{ endfor }%{ endfor }"`)
	entries := make([]node.Entry, 1000)
	for i := range entries {
		entries[i] = node.Entry{Key: node.Key(fmt.Sprintf("k%04d", i)), Value: cty.EmptyObjectVal}
	}
	within(t, 20*time.Second, "PlanFile", func() {
		got, err := f.tg.PlanFile(context.Background(), entries)
		if err != nil || !got.Changed || !strings.Contains(got.Diff, "(no diff: 0 bytes on disk") {
			t.Errorf("plan of a %d-line render: %v %.200q", len(entries)*len(entries), err, got.Diff)
		}
	})
}
