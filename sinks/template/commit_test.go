package template

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipeline/pipeline/engine/node"
)

// One round renders, checks, swaps and reloads once, however many
// Updates and Deletes it made: a full pass in chunks, and a round that
// replaces an endpoint (an upsert and a delete).
func TestOneWritePerRound(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "reloads")
	f := open(t, serversTmpl+`check_command = ["true"]`+"\n"+fmt.Sprintf(`reload_command = ["sh", "-c", "echo x >> %s"]`, marker)+"\nreload_interval = \"0s\"")
	reloads := func() int {
		b, _ := os.ReadFile(marker)
		return strings.Count(string(b), "x")
	}
	counts := func() [3]int {
		return [3]int{int(f.count("pipeline_sink_template_checks_total", "result", "ok")),
			int(f.count("pipeline_sink_template_renders_total", "result", "written")), reloads()}
	}
	ctx := context.Background()
	// A full pass hands its entries over in chunks.
	f.tg.Update(ctx, []node.Entry{{Key: "a", Value: server("10.0.0.1", 80)}})
	f.tg.Update(ctx, []node.Entry{{Key: "b", Value: server("10.0.0.2", 80)}})
	f.tg.Commit(ctx, full)
	if got := counts(); got != [3]int{1, 1, 1} {
		t.Fatalf("after the first full pass: checks, writes, reloads = %v, want one each", got)
	}
	f.tg.Update(ctx, []node.Entry{{Key: "c", Value: server("10.0.0.3", 81)}})
	f.tg.Delete(ctx, []node.Entry{{Key: "b"}})
	if failed := f.tg.Commit(ctx, synced); len(failed) != 1 || failed[0].Err != nil {
		t.Errorf("Commit returned %v, want the one write for tap", failed)
	}
	if got := counts(); got != [3]int{2, 2, 2} {
		t.Errorf("after a round of an upsert and a delete: checks, writes, reloads = %v, want one more each", got)
	}
	if want := "backend be\n  server a 10.0.0.1:80\n  server c 10.0.0.3:81\n"; f.file() != want {
		t.Errorf("file %q, want %q", f.file(), want)
	}
}

// A refused render fails every entry the file does not hold as wanted,
// upserts and deletes, in the round that made it; the keys the file holds
// as wanted do not fail.
func TestCommitHandsBackFailures(t *testing.T) {
	f := open(t, serversTmpl+`check_command = ["sh", "-c", "! grep -q 10.0.0.9 \"$0\"", "{{path}}"]`)
	ctx := context.Background()
	f.tg.Update(ctx, []node.Entry{{Key: "a", Value: server("10.0.0.1", 80)}, {Key: "b", Value: server("10.0.0.2", 80)}})
	f.tg.Commit(ctx, full)
	f.tg.Update(ctx, []node.Entry{{Key: "bad", Value: server("10.0.0.9", 80)}})
	f.tg.Delete(ctx, []node.Entry{{Key: "b"}})
	var got []string
	for _, e := range f.tg.Commit(ctx, synced) {
		if e.Err == nil || !strings.Contains(e.Err.Error(), "check_command refused") {
			t.Errorf("entry %s: %v, want the refusal", e.Key, e.Err)
		}
		got = append(got, fmt.Sprintf("%s=%s", e.Key, showValue(e.Value)))
	}
	want := `b={"ip":"10.0.0.2","port":80} bad={"ip":"10.0.0.9","port":80}`
	if strings.Join(got, " ") != want {
		t.Errorf("failed entries %q, want %q (the wanted entry of an upsert, the held one of a delete)", strings.Join(got, " "), want)
	}
	// The same round again (the loop's retry) fails them again, without
	// running the check again.
	if n := len(f.tg.Commit(ctx, synced)); n != 2 {
		t.Errorf("the retry handed back %d failures, want 2", n)
	}
	if n := f.count("pipeline_sink_template_checks_total", "result", "failed"); n != 1 {
		t.Errorf("checks failed = %v, want 1 (a refused candidate is not checked again)", n)
	}
	f.tg.Delete(ctx, []node.Entry{{Key: "bad"}})
	if failed := f.tg.Commit(ctx, synced); len(failed) != 1 || failed[0].Err != nil {
		t.Errorf("after the bad entry went: %v, want the write", failed)
	}
}
