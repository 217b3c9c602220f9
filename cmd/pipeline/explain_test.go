package main

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pipeline/pipeline/cmd/pipeline/admin"
	"github.com/pipeline/pipeline/cmd/pipeline/inspect"
)

const explainConfig = `
variable "secret" {
  default   = "hunter2-secret-value"
  sensitive = true
}
source "static" "a" {
  records = {
    "a1"     = { v = "x" }
    "shared" = { v = var.secret }
  }
}
source "static" "b" {
  records = {
    "shared" = { v = var.secret }
  }
}
sink "log" "out" {
  inputs = [source.static.a, source.static.b]
  path   = "%s"
}
`

// TestExplainCommand runs a fan-in of two static sources and asks it
// about a key both hold and about an absent one, through the admin
// endpoint and the CLI; secrets stay masked.
func TestExplainCommand(t *testing.T) {
	dir := t.TempDir()
	addr, stop := startRun(t, dir, strings.Replace(explainConfig, "%s", dir+"/out.log", 1))
	defer stop()
	if r := waitReady(t, http.DefaultClient, "http://"+addr+"/readyz"); !r.Ready {
		t.Fatalf("not ready: %+v", r)
	}

	var out, errb bytes.Buffer
	if code := run([]string{"explain", "--against", addr, "shared"}, &out, &errb); code != 0 {
		t.Fatalf("explain shared: exit %d\n%s%s", code, out.String(), errb.String())
	}
	got := out.String()
	for _, want := range []string{"sink.log.out  shared", "origin   source.static.a", "p.hcl:9", "stage    source.static.a  shared", "(sensitive)"} {
		if !strings.Contains(got, want) {
			t.Errorf("explain shared lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "hunter2") {
		t.Fatalf("explain shows a secret:\n%s", got)
	}

	out.Reset()
	errb.Reset()
	if code := run([]string{"explain", "--against", "http://" + addr, "--json", "nope"}, &out, &errb); code != 2 {
		t.Fatalf("explain of an absent key: exit %d, want 2\n%s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), `"absent":true`) || !strings.Contains(out.String(), `"attr":"records"`) {
		t.Fatalf("explain --json nope:\n%s", out.String())
	}
	if strings.Contains(out.String(), "hunter2") {
		t.Fatalf("explain of an absent key shows a secret:\n%s", out.String())
	}

	resp, err := http.Post("http://"+addr+"/explain?key=shared", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST /explain: %s, want 405", resp.Status)
	}
}

// TestExplainAbsentNamesTheLastStage: for a key no sink holds, explain
// says which stage holds it last, so the reader knows where it stops.
func TestExplainAbsentNamesTheLastStage(t *testing.T) {
	var b strings.Builder
	inspect.WriteExplain(&b, admin.Explanation{Key: "10.0.0.2", Absent: true,
		Seen:  []admin.Stage{{Node: "source.files.hosts", Key: "10.0.0.2", Present: true, Value: map[string]any{"zone": "b"}}},
		Gates: []admin.Gate{{Node: "transform.extract.zone_a", Attr: "where", Pos: "main.hcl:22:11", Text: `record.value.zone == "a"`}}}, time.Now())
	want := `10.0.0.2 is in no sink.
It is held by:
  source.files.hosts = {"zone":"b"}
No stage after source.files.hosts holds it: a setting below drops it there, or gives it another key.
What decides which records reach the sinks:
  transform.extract.zone_a  where = record.value.zone == "a"  (main.hcl:22:11)
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("explain of an absent key (-want +got):\n%s", diff)
	}
}
