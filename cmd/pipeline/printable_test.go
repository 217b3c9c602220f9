package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pipeline/pipeline/cmd/pipeline/admin"
	"github.com/pipeline/pipeline/cmd/pipeline/configtest"
	"github.com/pipeline/pipeline/cmd/pipeline/inspect"
	"github.com/pipeline/pipeline/cmd/pipeline/planview"
	"github.com/pipeline/pipeline/cmd/pipeline/view"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/plan"
	"github.com/pipeline/pipeline/engine/reconcile"
)

// hostileText is what an object written by someone else may carry: a
// window title set (OSC), a screen clear (CSI), a C1 CSI, DEL, a carriage
// return and a bidi override.
const hostileText = "x\x1b]0;pwned\x07\x1b[2J\u009b2J\x7f\r\u202eevil"

// hostileHCL is hostileText in HCL string syntax.
const hostileHCL = `x\u001b]0;pwned\u0007\u001b[2J\u009b2J\u007f\r\u202eevil`

// ourColours are the only escape sequences the views write themselves.
var ourColours = regexp.MustCompile(`\x1b\[(0|1|2|31|32|33)m|\x1b\[H\x1b\[2J`)

// unsafeRune is a character the views escape.
func unsafeRune(r rune) bool { return view.Printable(string(r)) != string(r) }

// checkNoRaw fails when text holds a control or bidi character other than
// the views' own colour codes.
func checkNoRaw(t *testing.T, view, text string) {
	t.Helper()
	rest := ourColours.ReplaceAllString(text, "")
	if i := strings.IndexFunc(rest, unsafeRune); i >= 0 {
		t.Errorf("%s writes %q raw:\n%q", view, []rune(rest[i:])[0], text)
	}
}

// hostileConfig: records whose keys and values carry hostileText, into a
// log sink and a template sink (whose plan shows a diff of the file).
const hostileConfig = `
source "static" "a" {
  records = {
    "k-%[1]s" = { v = "%[1]s" }
  }
}
sink "log" "out" {
  input = source.static.a
  path  = "%[2]s"
}
sink "template" "t" {
  input    = source.static.a
  template = "%%{ for r in records }${r.key} ${r.value.v}\n%%{ endfor }"
  path     = "%[3]s"
}
`

// TestViewsEscapeTerminalControls runs every human view on records whose
// key and value carry terminal escapes: none reaches stdout or stderr raw
// (plan and explain used to print them as they came).
func TestViewsEscapeTerminalControls(t *testing.T) {
	dir := t.TempDir()
	src := fmt.Sprintf(hostileConfig, hostileHCL, filepath.Join(dir, "out.log"), filepath.Join(dir, "t.txt"))
	cfg := filepath.Join(dir, "p.hcl")
	writeConfig(t, cfg, src)
	key := "k-" + hostileText

	for _, args := range [][]string{{"validate", cfg}, {"plan", cfg}, {"graph", cfg}} {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		if args[0] == "plan" && !strings.Contains(out.String(), `k-x\x1b]0;pwned`) {
			t.Errorf("plan does not show the key escaped (exit %d):\n%s%s", code, out.String(), errb.String())
		}
		checkNoRaw(t, args[0]+" stdout", out.String())
		checkNoRaw(t, args[0]+" stderr", errb.String())
	}

	// A file name is text someone else chose too.
	named := filepath.Join(t.TempDir(), "p"+hostileText+".hcl")
	writeConfig(t, named, "locals {\n  a   = 1\n}\n")
	for _, args := range [][]string{{"validate", named}, {"fmt", "-check", named}} {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		if !strings.Contains(out.String()+errb.String(), `px\x1b]0;pwned`) {
			t.Errorf("%s does not name the file escaped (exit %d):\n%q%q", args[0], code, out.String(), errb.String())
		}
		checkNoRaw(t, args[0]+" of a file name", out.String()+errb.String())
	}

	addr, stop := startRun(t, dir, src)
	defer stop()
	waitReady(t, http.DefaultClient, "http://"+addr+"/readyz")
	var out, errb bytes.Buffer
	if code := run([]string{"explain", "--against", addr, key}, &out, &errb); code != 0 {
		t.Fatalf("explain: exit %d\n%s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), `\x1b[2J`) {
		t.Errorf("explain does not show the key escaped:\n%s", out.String())
	}
	checkNoRaw(t, "explain", out.String()+errb.String())

	out.Reset()
	if err := inspect.Top(context.Background(), &out, inspect.TopOptions{Against: addr, Interval: 100 * time.Millisecond, Count: 1}); err != nil {
		t.Fatal(err)
	}
	checkNoRaw(t, "top", out.String())
}

// TestTapEscapesWhatTheServerSays: tap prints what an admin endpoint
// answers, which --against may name anywhere (inspect's
// TestTopEscapesWhatTheServerSays checks top).
func TestTapEscapesWhatTheServerSays(t *testing.T) {
	value, _ := json.Marshal(hostileText)
	line, err := json.Marshal(admin.TapLine{Time: time.Now(), Node: "sink.log." + hostileText, Op: "upsert", Key: hostileText,
		Value: value, Origin: &admin.Origin{Source: hostileText}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := inspect.PrintTap(context.Background(), &out, bytes.NewReader(append(line, '\n')), inspect.TapOptions{}); err != nil {
		t.Fatal(err)
	}
	checkNoRaw(t, "tap", out.String())

}

// TestColouredPlanEscapes: with colours on, the plan's own codes are the
// only escapes it writes.
func TestColouredPlanEscapes(t *testing.T) {
	var out bytes.Buffer
	p := hostilePlan()
	if err := (planview.Text{Colour: true, Max: 10}).Write(&out, p); err != nil {
		t.Fatal(err)
	}
	checkNoRaw(t, "coloured plan", out.String())
	if !strings.Contains(out.String(), "\x1b[32m+\x1b[0m") {
		t.Errorf("no colour left:\n%q", out.String())
	}
}

// TestTextLogQuotesControls: the text log (slog's text handler, as run
// sets it up) quotes a value with control characters, so a log line
// carries no raw escape either.
func TestTextLogQuotesControls(t *testing.T) {
	var b bytes.Buffer
	log, err := newLogger(&b, "text", "debug", nil)
	if err != nil {
		t.Fatal(err)
	}
	log.Warn("update failed", "key", hostileText, slog.String("err", "target said "+hostileText), slog.Any(hostileText, 1))
	checkNoRaw(t, "text log", b.String())
	if diff := cmp.Diff(1, strings.Count(b.String(), "\n")); diff != "" {
		t.Errorf("one line (-want +got):\n%s%q", diff, b.String())
	}
}

// hostilePlan is a plan of one change whose every text is hostileText.
func hostilePlan() *planview.Plan {
	c := plan.PlannedChange{Change: reconcile.Change{Address: "sink.log.x", Action: reconcile.Create, Key: hostileText},
		After: hostileText, Origins: []string{hostileText}, Detail: []string{hostileText}, DryRunError: hostileText}
	return &planview.Plan{PlanResult: plan.PlanResult{
		Sinks: []plan.SinkPlan{{Address: "sink.log." + hostileText, Target: node.TargetInfo{Location: hostileText, Kind: hostileText, Exists: true},
			Changes: []plan.PlannedChange{c}, File: &node.FilePlan{Diff: "--- a\n+++ b\n@@ -1 +1 @@\n-" + hostileText + "\n+" + hostileText + "\n " + hostileText + "\n"}}},
		Warnings: []plan.PlanWarning{{Address: hostileText, Message: hostileText}}}}
}

// TestTestAndAuditViewsEscape: a failed config test shows record keys and
// values, a broken audit trail quotes its line: both through printable.
func TestTestAndAuditViewsEscape(t *testing.T) {
	value, _ := json.Marshal(hostileText)
	var out bytes.Buffer
	configtest.WriteResult(&out, &configtest.Result{File: "a.test.hcl", Name: hostileText, Failures: []configtest.Failure{{Pos: "a.test.hcl:3:1", Node: "sink.log.x",
		Message: hostileText, Missing: []configtest.Entry{{Key: hostileText, Value: value}}, Unexpected: []configtest.Entry{{Key: hostileText, Value: value}}}}})
	checkNoRaw(t, "pipeline test", out.String())
	out.Reset()
	printVerify(&out, verifyView{Problem: &problemView{File: "audit.jsonl", Line: 3, Kind: "bad_line", Detail: hostileText}})
	checkNoRaw(t, "audit verify", out.String())
}
