package template

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/schema"
)

var up = &node.Upstream{Address: "source.static.x", Type: node.Records}

const serversTmpl = `template = <<-EOT
backend be
%{ for r in records ~}
  server ${r.key} ${r.value.ip}:${r.value.port}
%{ endfor ~}
EOT
`

// fixture is an opened target rendering into a temporary directory.
type fixture struct {
	t      *testing.T
	tg     *Target
	health *nodetest.HealthRecorder
	reg    *prometheus.Registry
	path   string
}

func open(t *testing.T, body string) *fixture {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "out.cfg")
	body = strings.ReplaceAll(body, "DIR", dir)
	s := nodetest.MustBuild(t, Spec(), fmt.Sprintf("input = source.static.x\npath = %q\n%s", path, body), up).Sink.(*Sink)
	reg := prometheus.NewRegistry()
	env, h := nodetest.Env(t, reg)
	tg, err := s.Open(context.Background(), env, node.ModeRun)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tg.Close() })
	return &fixture{t: t, tg: tg.(*Target), health: h, reg: reg, path: path}
}

func server(ip string, port int) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{"ip": cty.StringVal(ip), "port": cty.NumberIntVal(int64(port))})
}

// put updates key with value and ends the round as the sink loop does.
func (f *fixture) put(key string, v cty.Value, r node.Round) {
	f.tg.Update(context.Background(), []node.Entry{{Key: node.Key(key), Value: v}})
	f.tg.Commit(context.Background(), r)
}

// round records batch (Update) and ends the round (Commit), returning
// the error Commit handed back for each entry whose write failed.
func (f *fixture) round(batch []node.Entry, r node.Round) map[node.Key]error {
	f.tg.Update(context.Background(), batch)
	failed := map[node.Key]error{}
	for _, e := range f.tg.Commit(context.Background(), r) {
		if e.Err != nil {
			failed[e.Key] = e.Err
		}
	}
	return failed
}

func (f *fixture) del(key string, r node.Round) {
	f.tg.Delete(context.Background(), []node.Entry{{Key: node.Key(key)}})
	f.tg.Commit(context.Background(), r)
}

func (f *fixture) file() string {
	f.t.Helper()
	b, err := os.ReadFile(f.path)
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

func (f *fixture) count(name string, labels ...string) float64 {
	f.t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		f.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				ok := false
				for _, lp := range m.GetLabel() {
					ok = ok || (lp.GetName() == labels[i] && lp.GetValue() == labels[i+1])
				}
				if !ok {
					continue metric
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

var synced = node.Round{Synced: true}
var full = node.Round{Synced: true, Full: true}

// Records render in key order, whatever order they came in, and the file
// gets its mode; nothing is written before the input synced.
func TestRenderSortedAfterSync(t *testing.T) {
	f := open(t, serversTmpl+`mode = "0640"`)
	f.put("web-b", server("10.0.0.2", 80), node.Round{})
	f.put("web-a", server("10.0.0.1", 80), node.Round{Full: true})
	if _, err := os.Stat(f.path); !os.IsNotExist(err) {
		t.Fatalf("file written before the input synced: %v", err)
	}
	f.tg.Commit(context.Background(), full)
	want := "backend be\n  server web-a 10.0.0.1:80\n  server web-b 10.0.0.2:80\n"
	if diff := cmp.Diff(want, f.file()); diff != "" {
		t.Fatalf("file (-want +got):\n%s", diff)
	}
	st, _ := os.Stat(f.path)
	if st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", st.Mode().Perm())
	}
	if entries := filesBeside(t, f.path); len(entries) != 1 {
		t.Errorf("directory holds %v, want only the rendered one and its state file (no temporary left)", entries)
	}
	f.del("web-b", synced)
	if diff := cmp.Diff("backend be\n  server web-a 10.0.0.1:80\n", f.file()); diff != "" {
		t.Errorf("after delete (-want +got):\n%s", diff)
	}
}

// A render equal to the file writes nothing and reloads nothing: a restart
// over an equal file leaves its inode and runs no command.
func TestEqualFileNotWritten(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "reloads")
	body := serversTmpl + fmt.Sprintf(`reload_command = ["sh", "-c", "echo x >> %s"]`, marker)
	f := open(t, body)
	f.put("a", server("10.0.0.1", 80), full)
	st1, _ := os.Stat(f.path)
	// A second target over the same file, as after a restart.
	s := f.tg.s
	env, _ := nodetest.Env(t, nil)
	tg2, err := s.Open(context.Background(), env, node.ModeRun)
	if err != nil {
		t.Fatal(err)
	}
	defer tg2.Close()
	tg2.Update(context.Background(), []node.Entry{{Key: "a", Value: server("10.0.0.1", 80)}})
	_ = tg2.(*Target).Commit(context.Background(), full)
	tg2.(*Target).Commit(context.Background(), full) // a resync
	st2, _ := os.Stat(f.path)
	if !os.SameFile(st1, st2) {
		t.Error("the file was replaced although its bytes did not change")
	}
	b, _ := os.ReadFile(marker)
	if got := strings.Count(string(b), "x"); got != 1 {
		t.Errorf("reload ran %d times, want once (the first write only)", got)
	}
}

// A file edited by hand is restored at the next full reconcile, and counted.
func TestHandEditRestored(t *testing.T) {
	f := open(t, serversTmpl)
	f.put("a", server("10.0.0.1", 80), full)
	want := f.file()
	if err := os.WriteFile(f.path, []byte("edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.tg.Commit(context.Background(), synced) // an incremental round with no change does not read the file
	if f.file() != "edited\n" {
		t.Fatal("restored outside a full reconcile")
	}
	f.tg.Commit(context.Background(), full)
	if f.file() != want {
		t.Errorf("file %q not restored to %q", f.file(), want)
	}
	if n := f.count("pipeline_sink_template_restored_total"); n != 1 {
		t.Errorf("restored_total = %v, want 1", n)
	}
	_ = os.Remove(f.path)
	f.tg.Commit(context.Background(), full)
	if f.file() != want || f.count("pipeline_sink_template_restored_total") != 2 {
		t.Error("a removed file was not restored and counted")
	}
}

// backup = true keeps the replaced file as PATH.bak.
func TestBackup(t *testing.T) {
	f := open(t, serversTmpl+"backup = true")
	f.put("a", server("10.0.0.1", 80), full)
	if _, err := os.Stat(f.path + ".bak"); !os.IsNotExist(err) {
		t.Error("a backup of a file that did not exist")
	}
	first := f.file()
	f.put("b", server("10.0.0.2", 80), synced)
	b, err := os.ReadFile(f.path + ".bak")
	if err != nil || string(b) != first {
		t.Errorf("backup %q (%v), want %q", b, err, first)
	}
}

// A failing check keeps the old file, shows the output in health and a
// metric, does not check the same candidate again, and checks the next.
func TestCheckFailureKeepsFile(t *testing.T) {
	f := open(t, serversTmpl+`check_command = ["sh", "-c", "if grep -q bad \"$0\"; then echo \"bad line in $0\"; exit 1; fi", "{{path}}"]`)
	f.put("a", server("10.0.0.1", 80), full)
	good := f.file()
	f.put("bad", server("10.0.0.9", 80), synced)
	if f.file() != good {
		t.Fatal("a refused candidate replaced the file")
	}
	if f.health.State() != node.Degraded || !strings.Contains(f.health.Detail, "bad line in") {
		t.Errorf("health %v %q, want degraded with the check's output", f.health.State(), f.health.Detail)
	}
	if n := f.count("pipeline_sink_template_checks_total", "result", "failed"); n != 1 {
		t.Errorf("checks_total{failed} = %v", n)
	}
	f.tg.Commit(context.Background(), full) // a resync: same candidate, not checked again
	if n := f.count("pipeline_sink_template_checks_total", "result", "failed"); n != 1 {
		t.Errorf("the same candidate was checked again: checks_total{failed} = %v", n)
	}
	if f.count("pipeline_sink_template_failing") != 1 {
		t.Error("failing gauge not set")
	}
	f.del("bad", synced)
	if f.health.State() != node.Healthy || f.count("pipeline_sink_template_failing") != 0 {
		t.Errorf("health %v after a good candidate", f.health.State())
	}
	if entries := filesBeside(t, f.path); len(entries) != 1 {
		t.Errorf("directory holds %v, want no candidate left", entries)
	}
}

// The check runs on the candidate, not on the file in place.
func TestCheckSeesCandidate(t *testing.T) {
	f := open(t, serversTmpl+`check_command = ["sh", "-c", "case \"$0\" in *.tmp) grep -q 10.0.0.1 \"$0\";; *) exit 1;; esac", "{{path}}"]`)
	f.put("a", server("10.0.0.1", 80), full)
	if !strings.Contains(f.file(), "10.0.0.1") {
		t.Fatalf("not written: health %q", f.health.Detail)
	}
}

// A missing directory is an error naming the path; the file appears once
// the directory does.
func TestMissingDirectory(t *testing.T) {
	f := open(t, serversTmpl)
	dir := filepath.Dir(f.path)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	f.put("a", server("10.0.0.1", 80), full)
	if f.health.State() != node.Degraded || !strings.Contains(f.health.Detail, dir) {
		t.Errorf("health %v %q, want degraded naming %s", f.health.State(), f.health.Detail, dir)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f.tg.Commit(context.Background(), full)
	if !strings.Contains(f.file(), "10.0.0.1") || f.health.State() != node.Healthy {
		t.Errorf("not written at the resync after the directory appeared: %v", f.health.Detail)
	}
}

// owner and group take numeric ids (names are looked up at open).
func TestOwnerGroup(t *testing.T) {
	f := open(t, serversTmpl+fmt.Sprintf("owner = %q\ngroup = %q", fmt.Sprint(os.Getuid()), fmt.Sprint(os.Getgid())))
	f.put("a", server("10.0.0.1", 80), full)
	if _, err := os.Stat(f.path); err != nil {
		t.Fatal(err)
	}
	s := f.tg.s
	s.owner = "no-such-user-here"
	env, _ := nodetest.Env(t, nil)
	if _, err := s.Open(context.Background(), env, node.ModeRun); err == nil || !strings.Contains(err.Error(), "no-such-user-here") {
		t.Errorf("open with an unknown owner: %v", err)
	}
}

// A render error keeps the file and names the template's line and column.
func TestRenderErrorKeepsFile(t *testing.T) {
	f := open(t, serversTmpl)
	f.put("a", server("10.0.0.1", 80), full)
	good := f.file()
	f.put("b", cty.ObjectVal(map[string]cty.Value{"ip": cty.StringVal("10.0.0.2")}), synced)
	if f.file() != good {
		t.Error("file changed after a render error")
	}
	if f.health.State() != node.Degraded || !strings.Contains(f.health.Detail, "test.hcl:7:42") {
		t.Errorf("health %v %q, want degraded naming test.hcl:7:42", f.health.State(), f.health.Detail)
	}
	if f.count("pipeline_sink_template_renders_total", "result", "error") != 1 {
		t.Error("render error not counted")
	}
}

// template_file: errors are diagnostics at the template file's line and
// column when the configuration loads.
func TestTemplateFileDiagnostics(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct{ src, want string }{
		"unknown function":         {"a\n${nosuch(1)}\n", "tmpl:2:3"},
		"unknown record attribute": {"%{ for r in records }\n${r.ip}\n%{ endfor }\n", "tmpl:2:4"},
		"syntax":                   {"%{ for r in records }\n", "tmpl:2:1"},
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".tmpl")
			if err := os.WriteFile(p, []byte(c.src), 0o644); err != nil {
				t.Fatal(err)
			}
			_, diags := nodetest.Build(t, Spec(), fmt.Sprintf("input = source.static.x\npath = \"/tmp/x\"\ntemplate_file = %q", p), up)
			if !diags.HasErrors() {
				t.Fatal("no error")
			}
			d := diags[0]
			got := fmt.Sprintf("%s:%d:%d", filepath.Ext(d.Subject.Filename)[1:], d.Subject.Start.Line, d.Subject.Start.Column)
			if !strings.HasPrefix(got, c.want) {
				t.Errorf("diagnostic at %s (%s), want %s", got, d.Summary, c.want)
			}
		})
	}
	p := filepath.Join(dir, "ok.tmpl")
	_ = os.WriteFile(p, []byte("%{ for r in records }${r.key} ${upper(r.value.ip)}\n%{ endfor }"), 0o644)
	s := nodetest.MustBuild(t, Spec(), fmt.Sprintf("input = source.static.x\npath = \"/tmp/x\"\ntemplate_file = %q", p), up).Sink.(*Sink)
	r, err := s.render([]node.Entry{{Key: "a", Value: cty.ObjectVal(map[string]cty.Value{"ip": cty.StringVal("fe80::a")})}})
	if err != nil || string(r.data) != "a FE80::A\n" {
		t.Errorf("render %q %v", r.data, err)
	}
}

// Configuration errors, each at its attribute.
func TestConfigErrors(t *testing.T) {
	for body, want := range map[string]string{
		`path = "/x"`: "Missing template",
		`path = "/x"` + "\n" + `template = "a"` + "\n" + `template_file = "b"`:                                                                   "Conflicting template",
		`path = "/x"` + "\n" + `template = "a"` + "\n" + `mode = "9"`:                                                                            "Invalid file mode",
		`path = "/x"` + "\n" + `template = "a"` + "\n" + `reload_signal = "SIGUSR2"`:                                                             "reload_signal without pid_file",
		`path = "/x"` + "\n" + `template = "a"` + "\n" + `pid_file = "/p"`:                                                                       "pid_file without reload_signal",
		`path = "/x"` + "\n" + `template = "a"` + "\n" + `reload_signal = "SIGFOO"` + "\n" + `pid_file = "/p"`:                                   "Unknown signal",
		`path = "/x"` + "\n" + `template = "a"` + "\n" + `check_command = [""]`:                                                                  "Empty command",
		`path = "/x"` + "\n" + `template = "a"` + "\n" + `reload_command = ["x"]` + "\n" + `reload_signal = "SIGHUP"` + "\n" + `pid_file = "/p"`: "Two ways to reload",
		`path = "/x"` + "\n" + `template = "%{ for r in records }${r.name}%{ endfor }"`:                                                          "Unsupported attribute",
		`path = "/x"` + "\n" + `template = "${nosuch(records)}"`:                                                                                 "Call to unknown function",
	} {
		_, diags := nodetest.Build(t, Spec(), "input = source.static.x\n"+body, up)
		var got []string
		for _, d := range diags {
			got = append(got, d.Summary)
			if d.Subject == nil || d.Subject.Start.Line == 0 {
				t.Errorf("%q: diagnostic %q has no position", body, d.Summary)
			}
		}
		if !strings.Contains(strings.Join(got, "|"), want) {
			t.Errorf("%q: diagnostics %q, want %q", body, got, want)
		}
	}
}

// A sensitive value is rendered into the file but never into health,
// logs or the audit decision; the output of a command run on a file
// holding one is withheld, however it encodes the file (here reversed),
// unless show_command_output allows it, and then the secret's exact
// text is masked.
func TestSensitiveValueOnlyInFile(t *testing.T) {
	for _, show := range []bool{false, true} {
		t.Run(fmt.Sprint("show_command_output=", show), func(t *testing.T) {
			f := open(t, `template = "%{ for r in records }${r.value.password}${r.value.bad}%{ endfor }"`+"\n"+
				`check_command = ["sh", "-c", "cat \"$0\"; echo; rev \"$0\"; exit 1", "{{path}}"]`+"\n"+
				fmt.Sprintf("show_command_output = %v", show))
			var dec decisions
			f.tg.env.Decisions = dec.Decide
			secret := schema.MarkSensitive(cty.StringVal("hunter2"))
			batch := []node.Entry{{Key: "a", Value: cty.ObjectVal(map[string]cty.Value{"password": secret, "bad": cty.StringVal("")})}}
			f.round(batch, full)
			err := f.round(batch, synced)["a"] // the entry's retry
			shown := []string{f.health.Detail, fmt.Sprint(err), strings.Join(f.tg.Explain("a"), "\n")}
			for _, d := range dec.list {
				shown = append(shown, fmt.Sprint(d))
			}
			for _, text := range shown {
				if strings.Contains(text, "hunter2") || (!show && strings.Contains(text, "2retnuh")) {
					t.Errorf("shows the secret: %q", text)
				}
			}
			withheld := strings.Contains(f.health.Detail, "output withheld")
			if withheld == show || (show && !strings.Contains(f.health.Detail, schema.Mask)) {
				t.Errorf("health detail %q", f.health.Detail)
			}
			if !strings.Contains(fmt.Sprint(err), "check_command refused") {
				t.Errorf("the entry's error: %v", err)
			}
		})
	}
	f := open(t, `template = "%{ for r in records }${r.value.password}%{ endfor }"`)
	secret := schema.MarkSensitive(cty.StringVal("hunter2"))
	f.put("a", cty.ObjectVal(map[string]cty.Value{"password": secret}), full)
	if f.file() != "hunter2" {
		t.Errorf("file %q, want the secret rendered", f.file())
	}
	if got := f.tg.Show(node.Entry{Value: cty.ObjectVal(map[string]cty.Value{"password": secret})}); strings.Contains(got, "hunter2") {
		t.Errorf("Show %q", got)
	}
}

type decisions struct{ list []node.Decision }

func (d *decisions) Decide(x node.Decision) { d.list = append(d.list, x) }

// Each write is one decision with the file's digest and the check's and
// reload's outcomes.
func TestDecisionPerWrite(t *testing.T) {
	f := open(t, serversTmpl+`check_command = ["true"]`)
	var dec decisions
	f.tg.env.Decisions = dec.Decide
	f.tg.Update(context.Background(), []node.Entry{{Key: "a", Value: server("10.0.0.1", 80)}})
	wrote := f.tg.Commit(context.Background(), full)
	if len(wrote) != 1 || wrote[0].Key != node.Key(f.path) || len(wrote[0].Value.GetAttr("sha256").AsString()) != 64 {
		t.Errorf("Commit returned %v, want the file with its digest (for tap)", wrote)
	}
	if again := f.tg.Commit(context.Background(), full); again != nil {
		t.Errorf("a commit that wrote nothing returned %v", again)
	}
	if len(dec.list) != 1 {
		t.Fatalf("%d decisions, want 1", len(dec.list))
	}
	d := dec.list[0]
	if d.Kind != node.DecisionFileRendered || d.Attrs["check"] != "ok" || d.Attrs["reload"] != "none" || len(d.Attrs["sha256"]) != 64 {
		t.Errorf("decision %+v", d)
	}
}

func TestMetricsLint(t *testing.T) {
	f := open(t, serversTmpl)
	f.put("a", server("10.0.0.1", 80), full)
	problems, err := testutil.GatherAndLint(f.reg)
	if err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
