package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/zclconf/go-cty/cty"
	"go.uber.org/goleak"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/internal/redact"
)

var up = &node.Upstream{Address: "source.static.x", Type: node.Records}

// build builds an audit sink writing to dir/trail.jsonl with extra attributes.
func build(t testing.TB, dir, extra string) *Sink {
	t.Helper()
	body := fmt.Sprintf("input = source.static.x\npath = %q\n%s", filepath.Join(dir, "trail.jsonl"), extra)
	return nodetest.MustBuild(t, Spec(), body, up).Sink.(*Sink)
}

func open(t testing.TB, s *Sink) (*target, *nodetest.HealthRecorder, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	env, h := nodetest.Env(t, reg)
	tg, err := s.Open(context.Background(), env, node.ModeRun)
	if err != nil {
		t.Fatal(err)
	}
	return tg.(*target), h, reg
}

func rec(i int) node.Entry {
	return node.Entry{Key: fmt.Sprintf("10.0.0.%d/32", i), Value: cty.ObjectVal(map[string]cty.Value{"n": cty.NumberIntVal(int64(i))})}
}

// readLines decodes every line of a file.
func readLines(t testing.TB, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// mustVerify verifies the trail at dir with its checkpoint and fails on a problem.
func mustVerify(t testing.TB, dir string) Report {
	t.Helper()
	files, err := TrailFiles([]string{filepath.Join(dir, "trail.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(files, filepath.Join(dir, "trail.jsonl.checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Problem != nil {
		t.Fatalf("verify: %s", rep.Problem)
	}
	return rep
}

func TestTargetSuite(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	recs := []node.Record{{Key: "a", Value: cty.StringVal("1")}, {Key: "b", Value: cty.EmptyObjectVal}, {Key: "c", Value: cty.NumberIntVal(3)}}
	nodetest.RunTargetSuite(t, func(t *testing.T) node.Target {
		tg, _, _ := open(t, build(t, t.TempDir(), ""))
		return tg
	}, recs)
}

// TestLines checks the lines of a delta and of a decision, the source
// reference, redaction, sensitive values and digests.
func TestLines(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	dir := t.TempDir()
	s := build(t, dir, `redact = ["$.value.metadata.annotations", "$.source.uid", "$.detail.files"]`)
	s.cfg.secrets = redact.New([]string{"hunter2"})
	s.Now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	tg, _, reg := open(t, s)
	pod := cty.ObjectVal(map[string]cty.Value{"metadata": cty.ObjectVal(map[string]cty.Value{
		"namespace": cty.StringVal("shop"), "name": cty.StringVal("web-1"), "uid": cty.StringVal("u-1"),
		"resourceVersion": cty.StringVal("42"), "annotations": cty.MapVal(map[string]cty.Value{"x": cty.StringVal("y")}),
		"labels": cty.MapVal(map[string]cty.Value{"token": cty.StringVal("Bearer hunter2")})})})
	if err := tg.RecordDecision(node.Decision{Kind: node.DecisionConfigLoaded, Time: s.Now(), Detail: "configuration loaded with 3 nodes",
		ConfigGeneration: 7, Attrs: map[string]string{"nodes": "3", "files": "/etc/p.hcl"}}); err != nil {
		t.Fatal(err)
	}
	batch := []node.Entry{{Key: "10.0.0.7/32", Value: pod}}
	tg.Update(context.Background(), batch)
	tg.Delete(context.Background(), []node.Entry{{Key: "10.0.0.8/32"}})
	if batch[0].Err != nil {
		t.Fatal(batch[0].Err)
	}
	if err := tg.Close(); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, filepath.Join(dir, "trail.jsonl"))
	for _, l := range lines {
		delete(l, "prev")
		delete(l, "hash")
	}
	addr := "sink.audit.test"
	want := []map[string]any{
		{"seq": 1.0, "op": "open", "time": "2026-01-02T03:04:05Z", "node": addr, "config_generation": 1.0, "reason": "sink opened the trail"},
		{"seq": 2.0, "op": "config_loaded", "time": "2026-01-02T03:04:05Z", "node": "", "config_generation": 7.0,
			"reason": "configuration loaded with 3 nodes", "detail": map[string]any{"nodes": "3"}},
		{"seq": 3.0, "op": "upsert", "time": "2026-01-02T03:04:05Z", "node": addr, "key": "10.0.0.7/32", "config_generation": 7.0,
			"reason": "desired by the input", "source": map[string]any{"namespace": "shop", "name": "web-1", "resourceVersion": "42"},
			"value": map[string]any{"metadata": map[string]any{"namespace": "shop", "name": "web-1", "uid": "u-1", "resourceVersion": "42",
				"labels": map[string]any{"token": "(sensitive)"}}}},
		{"seq": 4.0, "op": "delete", "time": "2026-01-02T03:04:05Z", "node": addr, "key": "10.0.0.8/32", "config_generation": 7.0,
			"reason": "no longer desired by the input"},
	}
	if d := cmp.Diff(want, lines); d != "" {
		t.Errorf("lines (-want +got):\n%s", d)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "trail.jsonl"))
	if bytes.Contains(raw, []byte("hunter2")) {
		t.Error("a sensitive value reached the trail")
	}
	if got := testutil.ToFloat64(mustGauge(t, reg, "pipeline_sink_audit_head_seq")); got != 4 {
		t.Errorf("head seq metric = %v, want 4", got)
	}
	st, _ := os.Stat(filepath.Join(dir, "trail.jsonl"))
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	rep := mustVerify(t, dir)
	if rep.Lines != 4 || rep.HeadSeq != 4 {
		t.Errorf("verify read %d lines up to seq %d, want 4 and 4", rep.Lines, rep.HeadSeq)
	}
}

func mustGauge(t testing.TB, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "copy"})
			g.Set(mf.GetMetric()[0].GetGauge().GetValue())
			return g
		}
	}
	t.Fatalf("metric %s not registered", name)
	return nil
}

func TestDigestWithoutValues(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	dir := t.TempDir()
	tg, _, _ := open(t, build(t, dir, "include_values = false"))
	tg.Update(context.Background(), []node.Entry{rec(1)})
	tg.Close()
	l := readLines(t, filepath.Join(dir, "trail.jsonl"))[1]
	if _, has := l["value"]; has {
		t.Errorf("value written with include_values = false: %v", l)
	}
	sum := sha256.Sum256([]byte(`{"n":1}`))
	if want := "sha256:" + hex.EncodeToString(sum[:]); l["digest"] != want {
		t.Errorf("digest = %v, want %s", l["digest"], want)
	}
}

func TestStdout(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions()...)
	s := nodetest.MustBuild(t, Spec(), "input = source.static.x\npath = \"-\"", up).Sink.(*Sink)
	var out bytes.Buffer
	s.Stdout = &out
	tg, _, _ := open(t, s)
	tg.Update(context.Background(), []node.Entry{rec(1), rec(2)})
	tg.Close()
	if n := strings.Count(out.String(), "\n"); n != 3 {
		t.Fatalf("%d lines on stdout, want 3:\n%s", n, out.String())
	}
	f := filepath.Join(t.TempDir(), "copy")
	os.WriteFile(f, out.Bytes(), 0o600)
	if rep, err := Verify([]string{f}, ""); err != nil || rep.Problem != nil {
		t.Fatalf("verify stdout copy: %v %v", err, rep.Problem)
	}
}
