package template

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/schema"
)

// filesBeside lists the files in path's directory but its state file.
func filesBeside(t *testing.T, path string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Name() != filepath.Base(statePath(path)) {
			out = append(out, e.Name())
		}
	}
	return out
}

// logBuffer is a log the test reads, safe for the retry loop's goroutine.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// restarted is a target opened over the file at path as a restarted
// pipeline opens it: a new Sink and Target, nothing in memory.
type restarted struct {
	fixture
	log *logBuffer
}

func reopen(t *testing.T, path, body string, mode node.Mode) *restarted {
	t.Helper()
	s := nodetest.MustBuild(t, Spec(), fmt.Sprintf("input = source.static.x\npath = %q\n%s", path, body), up).Sink.(*Sink)
	reg := prometheus.NewRegistry()
	env, h := nodetest.Env(t, reg)
	log := &logBuffer{}
	env.Logger = slog.New(slog.NewTextHandler(log, nil))
	tg, err := s.Open(context.Background(), env, mode)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tg.Close() })
	return &restarted{fixture: fixture{t: t, tg: tg.(*Target), health: h, reg: reg, path: path}, log: log}
}

func keysOf(es []node.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, string(e.Key))
	}
	slices.Sort(out)
	return out
}

func (f *fixture) actual() []node.Entry {
	f.t.Helper()
	es, err := f.tg.Actual(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return es
}

// After a restart the target holds the entries the state file lists, the
// file being their render: a round that deletes nothing (the brake holds
// the deletes of an emptied input) keeps the file as it is, without a
// write; a changed template renders them again; the deletes, once
// applied, render.
func TestStateRestart(t *testing.T) {
	f := open(t, serversTmpl+`mode = "0640"`)
	f.round([]node.Entry{{Key: "web-a", Value: server("10.0.0.1", 80)}, {Key: "web-b", Value: server("10.0.0.2", 80)}}, full)
	before := f.file()
	fi, err := os.Stat(statePath(f.path))
	if err != nil {
		t.Fatalf("no state file: %v", err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("state file mode %v, want the file's 0640", fi.Mode().Perm())
	}
	if err := f.tg.Close(); err != nil {
		t.Fatal(err)
	}

	r := reopen(t, f.path, serversTmpl+`mode = "0640"`, node.ModeRun)
	if got := keysOf(r.actual()); !slices.Equal(got, []string{"web-a", "web-b"}) {
		t.Fatalf("Actual after a restart = %v, want web-a and web-b", got)
	}
	if !strings.Contains(r.log.String(), "entries of the file read from its state file") {
		t.Errorf("log: %s", r.log)
	}
	ino := inode(t, f.path)
	if failed := r.round(nil, full); len(failed) > 0 {
		t.Fatalf("a round holding every delete failed: %v", failed)
	}
	if r.file() != before || inode(t, f.path) != ino {
		t.Fatalf("the file was rewritten while every entry is held: %q", r.file())
	}
	if n := r.count("pipeline_sink_template_renders_total", "result", "written"); n != 0 {
		t.Errorf("renders written = %v, want 0", n)
	}
	r.del("web-b", synced)
	if want := "backend be\n  server web-a 10.0.0.1:80\n"; r.file() != want {
		t.Errorf("after the delete: %q, want %q", r.file(), want)
	}
	if err := r.tg.Close(); err != nil {
		t.Fatal(err)
	}

	// Another template: the entries the state file lists are rendered
	// with it.
	r = reopen(t, f.path, `template = "%{ for r in records }${r.key}=${r.value.ip}\n%{ endfor }"`, node.ModeRun)
	if got := keysOf(r.actual()); !slices.Equal(got, []string{"web-a"}) {
		t.Fatalf("Actual after the second restart = %v, want web-a", got)
	}
	r.round(nil, full)
	if r.file() != "web-a=10.0.0.1\n" {
		t.Errorf("file %q, want web-a rendered with the new template", r.file())
	}
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// A state file that does not describe the file is ignored, the reason
// logged once, and Actual returns what it returns without one: nothing.
func TestStateIgnored(t *testing.T) {
	cases := []struct {
		name, log string
		spoil     func(t *testing.T, path, state string, data []byte)
	}{
		{"missing", "no state file beside the file", func(t *testing.T, path, state string, data []byte) {
			must(t, os.Remove(state))
		}},
		{"corrupt", "corrupt", func(t *testing.T, path, state string, data []byte) {
			must(t, os.WriteFile(state, []byte("{not json"), 0o644))
		}},
		{"truncated", "corrupt", func(t *testing.T, path, state string, data []byte) {
			must(t, os.WriteFile(state, data[:len(data)*2/3], 0o644))
		}},
		{"trailing text", "corrupt", func(t *testing.T, path, state string, data []byte) {
			must(t, os.WriteFile(state, append(slices.Clone(data), "{}"...), 0o644))
		}},
		{"hand-edited file", "the file changed since pipeline wrote it", func(t *testing.T, path, state string, data []byte) {
			must(t, os.WriteFile(path, []byte("backend be\n  server web-a 10.0.0.9:80\n"), 0o644))
		}},
		{"mismatched digest", "the file changed since pipeline wrote it", func(t *testing.T, path, state string, data []byte) {
			must(t, os.WriteFile(state, bytes.Replace(data, []byte(`"sha256":"`), []byte(`"sha256":"00`), 1), 0o644))
		}},
		{"another version", "version 2", func(t *testing.T, path, state string, data []byte) {
			must(t, os.WriteFile(state, bytes.Replace(data, []byte(`"version":1`), []byte(`"version":2`), 1), 0o644))
		}},
		{"another file's", "not this file", func(t *testing.T, path, state string, data []byte) {
			must(t, os.WriteFile(state, bytes.Replace(data, []byte(`out.cfg"`), []byte(`other.cfg"`), 1), 0o644))
		}},
		{"oversized", "file too large", func(t *testing.T, path, state string, data []byte) {
			must(t, os.WriteFile(state, append(slices.Clone(data), bytes.Repeat([]byte(" "), 4096)...), 0o644))
		}},
		{"fifo", "not a regular file (a FIFO)", func(t *testing.T, path, state string, data []byte) {
			must(t, os.Remove(state))
			must(t, syscall.Mkfifo(state, 0o644))
		}},
		{"directory", "not a regular file (a directory)", func(t *testing.T, path, state string, data []byte) {
			must(t, os.Remove(state))
			must(t, os.Mkdir(state, 0o755))
		}},
		{"a value without its type", "corrupt", func(t *testing.T, path, state string, data []byte) {
			must(t, os.WriteFile(state, bytes.Replace(data, []byte(`"type":`), []byte(`"typo":`), 1), 0o644))
		}},
		{"a key twice", "listed twice", func(t *testing.T, path, state string, data []byte) {
			must(t, os.WriteFile(state, bytes.Replace(data, []byte(`"key":"web-b"`), []byte(`"key":"web-a"`), 1), 0o644))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := serversTmpl + "max_size = 2048\n"
			f := open(t, body)
			f.round([]node.Entry{{Key: "web-a", Value: server("10.0.0.1", 80)}, {Key: "web-b", Value: server("10.0.0.2", 80)}}, full)
			must(t, f.tg.Close())
			state := statePath(f.path)
			data, err := os.ReadFile(state)
			must(t, err)
			c.spoil(t, f.path, state, data)
			r := reopen(t, f.path, body, node.ModeRun)
			within(t, 5*time.Second, "Actual", func() {
				if got := r.actual(); len(got) != 0 {
					t.Errorf("Actual = %v, want nothing", keysOf(got))
				}
			})
			r.actual()
			log := r.log.String()
			if !strings.Contains(log, c.log) || strings.Count(log, "state file") != 1 {
				t.Errorf("log, want %q once:\n%s", c.log, log)
			}
			if c.name == "fifo" || c.name == "directory" {
				return
			}
			r.round([]node.Entry{{Key: "web-c", Value: server("10.0.0.3", 80)}}, full)
			if want := "backend be\n  server web-c 10.0.0.3:80\n"; r.file() != want {
				t.Errorf("file %q, want %q: the render of what the target was given, as without a state file", r.file(), want)
			}
			if got := keysOf(reopen(t, f.path, body, node.ModeRun).actual()); !slices.Equal(got, []string{"web-c"}) {
				t.Errorf("the state file written again lists %v, want web-c", got)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A sensitive value is in the rendered file and nowhere in the state
// file, which lists its digest; after a restart the entry is held with a
// placeholder: the file is kept while nothing else changes, the value
// sent again writes nothing, and a render that would need a value known
// by its digest only is refused, the file kept.
func TestStateSensitive(t *testing.T) {
	const tmpl = `template = "%{ for r in records }${r.key}:${r.value.password}\n%{ endfor }"`
	secret := "hunter2-" + strings.Repeat("s", 8)
	pw := func(s string) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{"password": schema.MarkSensitive(cty.StringVal(s))})
	}
	plain := cty.ObjectVal(map[string]cty.Value{"password": cty.StringVal("open")})
	f := open(t, tmpl)
	f.round([]node.Entry{{Key: "a", Value: pw(secret)}, {Key: "b", Value: plain}}, full)
	want := "a:" + secret + "\nb:open\n"
	if f.file() != want {
		t.Fatalf("file %q", f.file())
	}
	data, err := os.ReadFile(statePath(f.path))
	must(t, err)
	for _, form := range []string{secret, "hunter2", fmt.Sprintf("%q", secret)} {
		if bytes.Contains(data, []byte(form)) {
			t.Fatalf("the state file holds the secret (%q):\n%s", form, data)
		}
	}
	if !bytes.Contains(data, []byte(`"sensitive_digest":"`)) || !bytes.Contains(data, []byte(`"open"`)) {
		t.Fatalf("state file:\n%s", data)
	}
	must(t, f.tg.Close())

	// The value sent again: nothing written.
	r := reopen(t, f.path, tmpl, node.ModeRun)
	got := r.actual()
	if keys := keysOf(got); !slices.Equal(keys, []string{"a", "b"}) {
		t.Fatalf("Actual = %v", keys)
	}
	for _, e := range got {
		if e.Key == "a" && (!schema.IsSensitive(e.Value) || strings.Contains(fmt.Sprint(e.Value), "hunter2")) {
			t.Errorf("a is held as %#v, want a sensitive placeholder", e.Value)
		}
	}
	ino := inode(t, f.path)
	r.round([]node.Entry{{Key: "a", Value: pw(secret)}, {Key: "b", Value: plain}}, full)
	if r.file() != want || inode(t, f.path) != ino {
		t.Errorf("file rewritten: %q", r.file())
	}
	must(t, r.tg.Close())

	// Its delete held (nothing sent): the file kept; then another change
	// that would render it: refused, the file kept; its delete applied:
	// rendered.
	r = reopen(t, f.path, tmpl, node.ModeRun)
	r.actual()
	if failed := r.round(nil, full); len(failed) > 0 || r.file() != want {
		t.Fatalf("round with the delete held: %v, file %q", failed, r.file())
	}
	failed := r.round([]node.Entry{{Key: "c", Value: plain}}, synced)
	if failed["c"] == nil || !strings.Contains(failed["c"].Error(), "by digest only") || r.file() != want {
		t.Fatalf("a render needing the digest-only value: %v, file %q", failed, r.file())
	}
	if r.health.State() != node.Degraded || strings.Contains(r.health.Detail, "hunter2") {
		t.Errorf("health %v %q", r.health.State(), r.health.Detail)
	}
	r.del("a", synced)
	if r.file() != "b:open\nc:open\n" || r.health.State() != node.Healthy {
		t.Errorf("after the delete: %q, health %v %q", r.file(), r.health.State(), r.health.Detail)
	}
	for _, text := range []string{r.log.String(), r.health.Detail} {
		if strings.Contains(text, "hunter2") {
			t.Errorf("shows the secret: %s", text)
		}
	}

	// Another value for the key: written.
	r.round([]node.Entry{{Key: "a", Value: pw("other-secret")}}, synced)
	if !strings.Contains(r.file(), "a:other-secret\n") {
		t.Errorf("file %q", r.file())
	}
}

// A check_command that refuses the candidate leaves the state file as it
// was (it is written just before the swap), still describing the file.
func TestStateAfterRefusedCheck(t *testing.T) {
	body := serversTmpl + `check_command = ["sh", "-c", "! grep -q 10.0.0.9 \"$0\"", "{{path}}"]`
	f := open(t, body)
	f.round([]node.Entry{{Key: "a", Value: server("10.0.0.1", 80)}}, full)
	if err := f.round([]node.Entry{{Key: "bad", Value: server("10.0.0.9", 80)}}, synced)["bad"]; err == nil {
		t.Fatal("the refused entry succeeded")
	}
	must(t, f.tg.Close())
	if got := keysOf(reopen(t, f.path, body, node.ModeRun).actual()); !slices.Equal(got, []string{"a"}) {
		t.Errorf("after a refused candidate the state file lists %v, want a", got)
	}
}

// A state file written with its file not swapped in (a crash between the
// two writes) names a digest the file does not have, and is ignored;
// one written just before the swap a reader raced is found on a second
// read of the file.
func TestStateCrashBetweenWrites(t *testing.T) {
	f := open(t, serversTmpl)
	f.round([]node.Entry{{Key: "a", Value: server("10.0.0.1", 80)}}, full)
	old := f.file()
	f.round([]node.Entry{{Key: "b", Value: server("10.0.0.2", 80)}}, synced)
	must(t, f.tg.Close())
	must(t, os.WriteFile(f.path, []byte(old), 0o644)) // the file as before the swap
	r := reopen(t, f.path, serversTmpl, node.ModeRun)
	if got := r.actual(); len(got) != 0 {
		t.Errorf("Actual = %v, want nothing", keysOf(got))
	}
	if !strings.Contains(r.log.String(), "the file changed since pipeline wrote it") {
		t.Errorf("log: %s", r.log)
	}
}

// Plan after a restart renders what run would: with the entries the
// state file lists held (their deletes held by the brake) the file does
// not change, even with a sensitive value known by its digest only.
func TestStatePlan(t *testing.T) {
	const tmpl = `template = "%{ for r in records }${r.key}:${r.value.password}\n%{ endfor }"`
	f := open(t, tmpl)
	f.round([]node.Entry{
		{Key: "a", Value: cty.ObjectVal(map[string]cty.Value{"password": schema.MarkSensitive(cty.StringVal("hunter2"))})},
		{Key: "b", Value: cty.ObjectVal(map[string]cty.Value{"password": cty.StringVal("open")})},
	}, full)
	must(t, f.tg.Close())
	p := reopen(t, f.path, tmpl, node.ModePlan)
	held := p.actual()
	slices.SortFunc(held, func(x, y node.Entry) int { return strings.Compare(string(x.Key), string(y.Key)) })
	fp, err := p.tg.PlanFile(context.Background(), held)
	if err != nil || fp.Changed {
		t.Errorf("plan of the entries held: %+v, %v; want no change", fp, err)
	}
	fp, err = p.tg.PlanFile(context.Background(), append(held, node.Entry{Key: "c", Value: cty.ObjectVal(map[string]cty.Value{"password": cty.StringVal("x")})}))
	if err != nil || fp.Changed || !strings.Contains(fp.Diff, "by digest only") || strings.Contains(fp.Diff, "hunter2") {
		t.Errorf("plan of a render needing a digest-only value: %+v, %v", fp, err)
	}
	fp, err = p.tg.PlanFile(context.Background(), held[1:])
	if err != nil || !fp.Changed || strings.Contains(fp.Diff, "hunter2") || !strings.Contains(fp.Diff, "cannot mask") {
		t.Errorf("plan without the sensitive entry: %+v, %v; want no diff (the secret on disk is unknown to plan)", fp, err)
	}
	withSecret := append([]node.Entry{{Key: "a", Value: cty.ObjectVal(map[string]cty.Value{"password": schema.MarkSensitive(cty.StringVal("hunter2"))})}}, held[1:]...)
	fp, err = p.tg.PlanFile(context.Background(), append(withSecret, node.Entry{Key: "c", Value: cty.ObjectVal(map[string]cty.Value{"password": cty.StringVal("x")})}))
	if err != nil || !fp.Changed || strings.Contains(fp.Diff, "hunter2") || !strings.Contains(fp.Diff, "+c:x") {
		t.Errorf("plan with the secret sent again and a new entry: %+v, %v; want a diff, the secret masked", fp, err)
	}
	if _, err := os.Stat(statePath(f.path)); err != nil {
		t.Fatal(err)
	}
}

// The state file gets the file's mode and owner.
func TestStateOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI runs as root: giving a file another owner needs it")
		}
		t.Skip("giving a file another owner needs root")
	}
	f := open(t, serversTmpl+"owner = \"1234\"\ngroup = \"5678\"\nmode = \"0600\"")
	f.put("a", server("10.0.0.1", 80), full)
	for _, p := range []string{f.path, statePath(f.path)} {
		fi, err := os.Stat(p)
		must(t, err)
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != 1234 || st.Gid != 5678 || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %d:%d %v, want 1234:5678 0600", p, st.Uid, st.Gid, fi.Mode().Perm())
		}
	}
}

// A state file that cannot be written (larger than max_size) keeps
// nothing from writing the file: the old one is removed, so that none
// describes the file, and a warning says so once.
func TestStateTooLargeToWrite(t *testing.T) {
	body := `template = "${length(records)}\n"` + "\nmax_size = 1024\n"
	dir := t.TempDir()
	path := filepath.Join(dir, "out.cfg")
	f := reopen(t, path, body, node.ModeRun)
	f.round([]node.Entry{{Key: "a", Value: cty.StringVal("small")}}, full)
	if _, err := os.Stat(statePath(path)); err != nil {
		t.Fatalf("no state file: %v", err)
	}
	big := cty.StringVal(strings.Repeat("x", 700))
	f.round([]node.Entry{{Key: "b", Value: big}}, synced)
	f.round([]node.Entry{{Key: "c", Value: big}}, synced)
	if f.file() != "3\n" {
		t.Fatalf("file %q, want 3", f.file())
	}
	if _, err := os.Stat(statePath(path)); err == nil {
		t.Error("a state file describing an older file is left")
	}
	if n := strings.Count(f.log.String(), "cannot write the state file"); n != 1 {
		t.Errorf("warned %d times, want once:\n%s", n, f.log)
	}
	f.tg.Delete(context.Background(), []node.Entry{{Key: "b"}, {Key: "c"}})
	f.tg.Commit(context.Background(), synced)
	if got := keysOf(reopen(t, path, body, node.ModeRun).actual()); !slices.Equal(got, []string{"a"}) {
		t.Errorf("after the state fits again it lists %v, want a", got)
	}
	if !strings.Contains(f.log.String(), "state file written again") {
		t.Errorf("log:\n%s", f.log)
	}
}

// A reader that read the file just before a swap and the state file
// just after (swap writes the state file first) finds the match by
// reading the file once more.
func TestStateReaderRacedTheSwap(t *testing.T) {
	f := open(t, serversTmpl)
	f.round([]node.Entry{{Key: "a", Value: server("10.0.0.1", 80)}}, full)
	older := f.file()
	f.round([]node.Entry{{Key: "b", Value: server("10.0.0.2", 80)}}, synced)
	must(t, f.tg.Close())
	r := reopen(t, f.path, serversTmpl, node.ModeRun)
	r.tg.fresh = false
	d := r.tg.restore(onDisk{data: []byte(older), existed: true})
	if string(d.data) != r.file() || len(r.tg.entries) != 2 {
		t.Errorf("restore over the file read before the swap: %q, %d entries held; want the file read again and 2", d.data, len(r.tg.entries))
	}
}

// BenchmarkStateMarshal10k times the state file of 10,000 backends, one
// of which changed since the last (the others' encodings kept), and
// reports its size and the process's CPU time per state file (on a
// loaded machine, steadier than the time it took).
func BenchmarkStateMarshal10k(b *testing.B) {
	r := newRenderTarget(b)
	w, tg := r.t.state, r.t
	size := 0
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	defer func() {
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
		cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
		b.ReportMetric(float64(cpu)/float64(b.N)/1e6, "cpu-ms")
	}()
	for i := 0; b.Loop(); i++ {
		be := benchBackend(0)
		tg.Update(context.Background(), []node.Entry{{Key: node.Key(be.Name), Value: cty.ObjectVal(map[string]cty.Value{"ip": cty.StringVal(be.IP), "port": cty.NumberIntVal(int64(8081 - i%2))})}})
		data, err := w.marshal(tg.s.path, tg.s.address, "0", tg.recs.sorted(), tg.s.maxSize)
		if err != nil {
			b.Fatal(err)
		}
		size = len(data)
	}
	b.ReportMetric(float64(size), "bytes")
}

// A key JSON would read back as another (not UTF-8) is not encoded: no
// state file rather than one naming a key the target does not hold.
func TestStateKeyNotUTF8(t *testing.T) {
	if _, err := encodeEntry(node.Entry{Key: "a\xff", Value: cty.StringVal("x")}, newSalt()); err == nil {
		t.Error("a key that is not UTF-8 was encoded")
	}
	if _, err := encodeEntry(node.Entry{Key: "a<&>é", Value: cty.StringVal("x")}, newSalt()); err != nil {
		t.Error(err)
	}
}
