package files

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/zclconf/go-cty/cty"
	"go.uber.org/goleak"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/internal/kobject"
	"github.com/pipeline/pipeline/schema"
)

// build decodes a source "files" "test" block in a config file of dir.
func build(t testing.TB, dir, body string) (*Source, hcl.Diagnostics) {
	t.Helper()
	src := "source \"files\" \"test\" {\n" + body + "\n}\n"
	cfg, diags := schema.NewLoader().ParseSource(filepath.Join(dir, "pipeline.hcl"), []byte(src), schema.Options{Environ: []string{}})
	if diags.HasErrors() {
		return nil, diags
	}
	spec := Spec()
	nb := cfg.Nodes[0]
	content, d := schema.Decode(nb.Body, spec.FullBody(), cfg.Ctx, nb.DeclRange)
	if d.HasErrors() {
		return nil, d
	}
	n, d := spec.NewSource(node.Build{Address: nb.Address(), Name: nb.Name, Content: content, Config: cfg})
	s, _ := n.(*Source)
	return s, d
}

func mustBuild(t testing.TB, dir, body string) *Source {
	t.Helper()
	s, diags := build(t, dir, body)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return s
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeAtomic replaces path by renaming a temporary file over it, as
// editors and kubelet do.
func writeAtomic(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	write(t, tmp, content)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func pod(name, app string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  namespace: shop\n  labels: {app: " + app +
		"}\n  managedFields: [{manager: x}]\nspec:\n  priority: 3\n"
}

func TestSpecDiagnostics(t *testing.T) {
	tests := []struct {
		body string
		want []string
	}{
		{`paths = ["m/*.yaml"]`, nil},
		{`paths = []`, []string{"No paths"}},
		{`paths = ["m/[.yaml"]`, []string{"Invalid glob pattern"}},
		{"paths = [\"a\"]\nselector = \"a in (\"", []string{"Invalid label selector"}},
		{"paths = [\"a\"]\nindex_by = [\"{.a[}\"]", []string{"Invalid index_by path"}},
		{"paths = [\"a\"]\nignore_fields = [\"{.a[*]}\"]", []string{"Invalid ignore_fields path"}},
		{"paths = [\"a\"]\npoll_interval = \"-1s\"", []string{"Invalid duration"}},
		// format and key
		{"paths = [\"a\"]\nformat = \"csv\"\nkey = item.ip", nil},
		{"paths = [\"a\"]\nformat = \"lines\"", nil},
		{"paths = [\"a\"]\nformat = \"jsn\"", []string{"Invalid value for format"}},
		{"paths = [\"a\"]\nformat = \"json\"", []string{"Missing key"}},
		{"paths = [\"a\"]\nkey = item.id", []string{"key needs a data format"}},
		{"paths = [\"a\"]\nformat = \"csv\"\nkey = item.ip\nselector = \"a=b\"\nkind = \"Pod\"", []string{"kind needs format \"kubernetes\"", "selector needs format \"kubernetes\""}},
		{"paths = [\"a\"]\nformat = \"yaml\"\nkey = object.id", []string{"Invalid reference"}},
	}
	for _, tt := range tests {
		_, diags := build(t, t.TempDir(), tt.body)
		var got []string
		for _, d := range diags {
			got = append(got, d.Summary)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%q: (-want +got)\n%s", tt.body, diff)
		}
	}
}

func TestRecords(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "m", "a.yaml"), "# comment only\n---\n"+pod("a", "web")+"---\n"+pod("b", "db")+"---\n- not\n- an object\n---\n")
	write(t, filepath.Join(dir, "m", "b.json"), `{"apiVersion":"v1","kind":"List","items":[
		{"apiVersion":"v1","kind":"Pod","metadata":{"name":"c","namespace":"shop","labels":{"app":"web"}}},
		{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"shop"}},
		{"kind":"Pod","metadata":{"name":"nover"}}]}`)
	write(t, filepath.Join(dir, "m", "c.yaml"), pod("a", "web")+"---\nkind: [unclosed\n")
	write(t, filepath.Join(dir, "n", "a.yaml"), pod("pz", "web"))
	write(t, filepath.Join(dir, "n", "b.yaml"), pod("py", "web"))
	tests := []struct {
		name  string
		body  string
		keys  []string
		skips []string // reason@where-suffix
		// winner, when set, is the name of the object the first record comes from.
		winner string
	}{
		{name: "all", body: `paths = ["m/*"]`, keys: []string{"shop/a", "shop/b", "shop/c", "shop/cm"},
			skips: []string{"bad_document@a.yaml:23 document 2", "bad_document@b.json item 2", "duplicate_key@c.yaml document 0", "bad_document@c.yaml:11 document 1"}},
		{name: "kind and selector", body: "paths = [\"m/*.yaml\", \"m/*.json\"]\nkind = \"Pod\"\nselector = \"app=web\"", keys: []string{"shop/a", "shop/c"}},
		{name: "index_by", body: "paths = [\"m/a.yaml\"]\nindex_by = [\"{.metadata.labels.app}\"]", keys: []string{"db", "web"}},
		// The smallest namespace/name provides a shared key, whatever the file order.
		{name: "index_by tie", body: "paths = [\"n/*.yaml\"]\nindex_by = [\"{.metadata.labels.app}\"]", keys: []string{"web"},
			skips: []string{"duplicate_key@a.yaml"}, winner: "py"},
		{name: "index missing", body: "paths = [\"m/b.json\"]\nindex_by = [\"{.metadata.labels.app}\"]", keys: []string{"web"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustBuild(t, dir, tt.body)
			records, _, skips := s.records(s.read().files)
			var keys []string
			for _, r := range records {
				keys = append(keys, r.Key)
			}
			if diff := cmp.Diff(tt.keys, keys); diff != "" {
				t.Errorf("keys (-want +got)\n%s", diff)
			}
			if tt.winner != "" {
				if got := node.Unpack(records[0].Value).GetAttr("metadata").GetAttr("name").AsString(); got != tt.winner {
					t.Errorf("key provided by %s, want %s", got, tt.winner)
				}
			}
			if tt.skips == nil {
				return
			}
			var got []string
			for _, sk := range skips {
				got = append(got, sk.reason+"@"+filepath.Base(sk.where))
			}
			if diff := cmp.Diff(tt.skips, got); diff != "" {
				t.Errorf("skips (-want +got)\n%s", diff)
			}
		})
	}
}

func TestRecordValue(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "p.yaml"), pod("a", "web"))
	s := mustBuild(t, dir, "paths = [\"p.yaml\"]\nignore_fields = [\"{.metadata.managedFields}\"]")
	records, _, _ := s.records(s.read().files)
	v := node.Unpack(records[0].Value)
	if v.GetAttr("metadata").Type().HasAttribute("managedFields") {
		t.Error("managedFields not ignored")
	}
	if got := v.GetAttr("spec").GetAttr("priority"); !got.RawEquals(cty.NumberIntVal(3)) {
		t.Errorf("priority %#v, want the number 3", got)
	}
}

// A Kubernetes object's numbers are exact too, in YAML and in JSON, and a
// byte-order mark before either changes nothing.
func TestObjectNumbersExact(t *testing.T) {
	const pi = "3.14159265358979323846264338327950288"
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), "\ufeffapiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {}\nspec: {pi: "+pi+"}\n")
	write(t, filepath.Join(dir, "b.json"), "\ufeff"+`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"},"spec":{"pi":`+pi+`}}`)
	s := mustBuild(t, dir, `paths = ["*"]`)
	records, _, skips := s.records(s.read().files)
	if len(records) != 2 || len(skips) != 0 {
		t.Fatalf("%d records, skips %v", len(records), skips)
	}
	for _, r := range records {
		if got := node.Unpack(r.Value).GetAttr("spec").GetAttr("pi"); !got.Equals(cty.MustParseNumberVal(pi)).True() {
			t.Errorf("%s: pi = %s", r.Key, got.AsBigFloat().Text('g', -1))
		}
	}
}

// countingOutput counts Replace calls on top of nodetest.Output.
type countingOutput struct {
	*nodetest.Output
	mu       sync.Mutex
	replaces int
}

func (o *countingOutput) Replace(r []node.Record) {
	o.mu.Lock()
	o.replaces++
	o.mu.Unlock()
	o.Output.Replace(r)
}

func (o *countingOutput) count() int { o.mu.Lock(); defer o.mu.Unlock(); return o.replaces }

// The loop re-reads once per burst of events, 100ms after the last one,
// and publishes only when the content changed.
func TestDebounce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "p.yaml"), pod("a", "web"))
		s := mustBuild(t, dir, "paths = [\"*.yaml\"]\npoll_interval = \"0s\"")
		env, _ := nodetest.Env(t, prometheus.NewRegistry())
		m, _ := kobject.NewMetrics(prometheus.NewRegistry())
		out := &countingOutput{Output: nodetest.NewOutput()}
		r := &run{src: s, env: env, out: out, m: m}
		events := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- r.loop(ctx, events) }()
		synctest.Wait()
		if out.count() != 1 || !out.Synced() {
			t.Fatalf("initial load: %d replaces, synced %v", out.count(), out.Synced())
		}
		write(t, filepath.Join(dir, "q.yaml"), pod("b", "web"))
		for range 5 {
			events <- struct{}{}
			time.Sleep(60 * time.Millisecond)
		}
		synctest.Wait()
		if out.count() != 1 {
			t.Fatalf("reloaded during the burst: %d replaces", out.count())
		}
		time.Sleep(debounce)
		synctest.Wait()
		if out.count() != 2 || len(out.Keys()) != 2 {
			t.Fatalf("after the burst: %d replaces, keys %v", out.count(), out.Keys())
		}
		events <- struct{}{} // nothing changed: the hash matches, no Replace
		time.Sleep(2 * debounce)
		if out.count() != 2 {
			t.Errorf("unchanged files published again")
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

func TestRunWatchesFiles(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	mdir := filepath.Join(dir, "manifests")
	write(t, filepath.Join(mdir, "a.yaml"), pod("a", "web"))
	write(t, filepath.Join(mdir, "skip.yaml"), pod("z", "other"))
	s := mustBuild(t, dir, "paths = [\"manifests/*.yaml\"]\nselector = \"app=web\"\npoll_interval = \"0s\"")
	reg := prometheus.NewRegistry()
	env, health := nodetest.Env(t, reg)
	out := nodetest.NewOutput()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, env, out) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	// wait wakes on each change of the output and also polls: a counter
	// (the bad document) can move without the output changing.
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for !cond() {
			select {
			case <-out.Changed():
			case <-tick.C:
			case <-deadline:
				t.Fatalf("timed out waiting for %s; keys %v", what, out.Keys())
			}
		}
	}
	keys := func(want ...string) func() bool { return func() bool { return cmp.Equal(want, out.Keys()) } }
	wait("initial load", func() bool { return out.Synced() && keys("shop/a")() })
	write(t, filepath.Join(mdir, "b.yaml"), pod("b", "web"))
	wait("added file", keys("shop/a", "shop/b"))
	writeAtomic(t, filepath.Join(mdir, "a.yaml"), strings.Replace(pod("a", "web"), "priority: 3", "priority: 4", 1))
	wait("modified file", func() bool {
		return out.State()["shop/a"].GetAttr("spec").GetAttr("priority").RawEquals(cty.NumberIntVal(4))
	})
	write(t, filepath.Join(mdir, "bad.yaml"), "apiVersion: v1\nkind: Pod\nmetadata: {name: [oops\n")
	if err := os.Remove(filepath.Join(mdir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	wait("deleted file", keys("shop/a"))
	wait("bad document counted", func() bool {
		return testutil.ToFloat64(mustCounter(t, reg)) >= 1
	})
	if health.State() != node.Healthy {
		t.Errorf("health %s", health.State())
	}
}

func mustCounter(t *testing.T, reg *prometheus.Registry) prometheus.Collector {
	m, err := kobject.NewMetrics(reg) // returns the registered collectors
	if err != nil {
		t.Fatal(err)
	}
	return m.Skipped.WithLabelValues(kobject.ReasonBadDocument)
}
