package files

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/internal/kobject"
)

// An unknown format says which exist and which was meant.
func TestFormatDiagnosticDetail(t *testing.T) {
	_, diags := build(t, t.TempDir(), "paths = [\"a\"]\nformat = \"jsn\"")
	if len(diags) != 1 || diags[0].Detail != `The argument "format" must be one of "kubernetes", "json", "jsonl", "yaml", "csv", "lines". Did you mean "json"?` {
		t.Errorf("diagnostics %v", diags)
	}
}

// Every format reads its items, keys them with the key expression, and
// skips (and names) what is malformed while reading the rest.
func TestFormats(t *testing.T) {
	tests := []struct {
		format, key, content string
		want                 map[string]string // key -> the item as JSON
		skips                []string          // reason@where
	}{
		{format: "json", key: "item.ip", content: `[{"ip":"10.0.0.1","n":1},{"ip":"10.0.0.2"},{"n":3},{"ip":"10.0.0.1"}]`,
			want:  map[string]string{"10.0.0.1": `{"ip":"10.0.0.1","n":1}`, "10.0.0.2": `{"ip":"10.0.0.2"}`},
			skips: []string{"bad_key@f:1 item 2", "duplicate_key@f:1"}},
		{format: "json", key: "item.ip", content: `{"ip":"10.0.0.9"}`, want: map[string]string{"10.0.0.9": `{"ip":"10.0.0.9"}`}},
		{format: "json", key: "item.ip", content: `[{"ip":`, skips: []string{"bad_document@f:1"}},
		{format: "json", key: "item.ip", content: "[\n  {\"ip\": \"a\"},\n  {\"ip\": [}\n]\n", skips: []string{"bad_document@f:3"}},
		// Numbers stay exact, as the configuration language reads them, not rounded to a float64.
		{format: "json", key: "item.ip", content: `[{"ip":"1","pi":3.14159265358979323846264338327950288,"big":123456789012345678901234567890}]`,
			want: map[string]string{"1": `{"big":123456789012345678901234567890,"ip":"1","pi":3.14159265358979323846264338327950288}`}},
		{format: "jsonl", key: "item.pi", content: `{"pi":3.14159265358979323846264338327950288}` + "\n",
			want: map[string]string{"3.14159265358979323846264338327950288": `{"pi":3.14159265358979323846264338327950288}`}},
		{format: "yaml", key: "item.ip", content: "ip: \"1\"\npi: 3.14159265358979323846264338327950288\nhex: 0x1F\nu: 1_000\n",
			want: map[string]string{"1": `{"hex":31,"ip":"1","pi":3.14159265358979323846264338327950288,"u":1000}`}},
		// A UTF-8 byte-order mark (as Excel and Notepad write) is no part of the content, in every format.
		{format: "json", key: "item.ip", content: "\ufeff[{\"ip\":\"1\"}]", want: map[string]string{"1": `{"ip":"1"}`}},
		{format: "jsonl", key: "item.ip", content: "\ufeff{\"ip\":\"1\"}\n", want: map[string]string{"1": `{"ip":"1"}`}},
		{format: "yaml", key: "item.ip", content: "\ufeffip: \"1\"\n", want: map[string]string{"1": `{"ip":"1"}`}},
		{format: "csv", key: "item.ip", content: "\ufeffip,zone\r\n1,a\r\n", want: map[string]string{"1": `{"ip":"1","zone":"a"}`}},
		{format: "lines", content: "\ufeffa\n", want: map[string]string{"a": `"a"`}},
		// YAML streams as the YAML library reads them: text after ---, the ... end marker, directives.
		{format: "yaml", key: "trimspace(item)", content: "--- |\n  a\n--- >\n  b\n---   \"c\"\n",
			want: map[string]string{"a": `"a\n"`, "b": `"b\n"`, "c": `"c"`}},
		{format: "yaml", key: "item.name", content: "--- &x\nname: a\n--- !thing\nname: b\n--- # comment\nname: c\n",
			want: map[string]string{"a": `{"name":"a"}`, "b": `{"name":"b"}`, "c": `{"name":"c"}`}},
		{format: "yaml", key: "item.name", content: "name: a\n...\n---\nname: b\n...\n# trailing comment\n",
			want: map[string]string{"a": `{"name":"a"}`, "b": `{"name":"b"}`}},
		// The YAML library needs --- after ...: the rest is an error with its line, never dropped in silence.
		{format: "yaml", key: "item.name", content: "name: a\n...\nname: b\n", want: map[string]string{"a": `{"name":"a"}`},
			skips: []string{"bad_document@f:3 document 1"}},
		{format: "yaml", key: "item.name", content: "%YAML 1.2\n---\nname: a\n...\n%YAML 1.1\n%TAG !e! tag:example.com,2000:\n--- !e!thing\nname: b\n",
			want: map[string]string{"a": `{"name":"a"}`, "b": `{"name":"b"}`}},
		{format: "yaml", key: "item.name", content: "base: &b {port: 80}\nname: a\nsvc:\n  <<: *b\n  tls: yes\n",
			want: map[string]string{"a": `{"base":{"port":80},"name":"a","svc":{"port":80,"tls":true}}`}},
		{format: "yaml", key: "item.name", content: "name: a\n---\nname: b\n  bad: indent\n", want: map[string]string{"a": `{"name":"a"}`},
			skips: []string{"bad_document@f:4 document 1"}},
		{format: "jsonl", key: "item.id", content: "{\"id\":7}\n\n{\"id\":\"x\",\"v\":true}\n{broken\n[1]\n",
			want:  map[string]string{"7": `{"id":7}`, "x": `{"id":"x","v":true}`},
			skips: []string{"bad_document@f:4", "bad_key@f:5"}},
		{format: "yaml", key: "item.name", content: "- name: a\n  port: 80\n- name: b\n---\nname: c\n---\nname: [unclosed\n",
			want:  map[string]string{"a": `{"name":"a","port":80}`, "b": `{"name":"b"}`, "c": `{"name":"c"}`},
			skips: []string{"bad_document@f:7 document 2"}},
		{format: "csv", key: "item.ip", content: "ip,zone\n10.0.0.1,a\n10.0.0.2,b,extra\n\"10.0.0.3\",\"c, d\"\n",
			want:  map[string]string{"10.0.0.1": `{"ip":"10.0.0.1","zone":"a"}`, "10.0.0.3": `{"ip":"10.0.0.3","zone":"c, d"}`},
			skips: []string{"bad_document@f:3"}},
		{format: "csv", key: "item.ip", content: "ip,ip\n1,2\n", skips: []string{"bad_document@f:1"}},
		// RFC 4180: a quoted field keeps its line breaks as written, \r\n too.
		{format: "csv", key: "item.ip", content: "ip,note\r\n1,\"a\r\nb\"\r\n2,\"c\nd\"\r\n3,\"e\"\"\r\n\"\"f\"\n",
			want: map[string]string{"1": `{"ip":"1","note":"a\r\nb"}`, "2": `{"ip":"2","note":"c\nd"}`, "3": `{"ip":"3","note":"e\"\r\n\"f"}`}},
		{format: "csv", key: "item.ip", content: "ip" + columns(maxColumns) + "\n1\n", skips: []string{"bad_document@f:1"}},
		{format: "csv", key: "item.ip", content: "ip\n\"unclosed\n", skips: []string{"bad_document@f:2"}},
		{format: "lines", content: "# allowed\n10.0.0.1\n  10.0.0.2 \r\n\n10.0.0.1\n",
			want:  map[string]string{"10.0.0.1": `"10.0.0.1"`, "10.0.0.2": `"10.0.0.2"`},
			skips: []string{"duplicate_key@f:5"}},
		{format: "lines", key: "upper(item)", content: "a\nb\n", want: map[string]string{"A": `"a"`, "B": `"b"`}},
	}
	for _, tt := range tests {
		t.Run(tt.format+" "+tt.content, func(t *testing.T) {
			dir := t.TempDir()
			write(t, filepath.Join(dir, "f"), tt.content)
			body := "paths = [\"f\"]\nformat = \"" + tt.format + "\"\n"
			if tt.key != "" {
				body += "key = " + tt.key + "\n"
			}
			s := mustBuild(t, dir, body)
			if s.Emits() != node.Records {
				t.Errorf("emits %s", s.Emits())
			}
			records, _, skips := s.records(s.read().files)
			got := map[string]string{}
			for _, r := range records {
				got[r.Key] = jsonOf(t, r)
				if r.Origin == nil || r.Origin.Source != "source.files.test" {
					t.Errorf("%s: origin %+v", r.Key, r.Origin)
				}
			}
			if len(tt.want) == 0 {
				tt.want = map[string]string{}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("records (-want +got)\n%s", diff)
			}
			var gotSkips []string
			for _, sk := range skips {
				gotSkips = append(gotSkips, sk.reason+"@"+filepath.Base(sk.where))
			}
			if diff := cmp.Diff(tt.skips, gotSkips); diff != "" {
				t.Errorf("skips (-want +got)\n%s", diff)
			}
		})
	}
}

func jsonOf(t *testing.T, r node.Record) string {
	t.Helper()
	v := node.Unpack(r.Value)
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A data file that stops parsing keeps its last good items, counted and
// named in the node's health, and its line is logged; fixed, it is read
// again.
func TestFormatKeepsLastGood(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ips.jsonl")
	write(t, path, "{\"ip\":\"10.0.0.1\"}\n{\"ip\":\"10.0.0.2\"}\n")
	s := mustBuild(t, dir, "paths = [\"*.jsonl\"]\nformat = \"jsonl\"\nkey = item.ip\npoll_interval = \"0s\"")
	reg := prometheus.NewRegistry()
	env, health := nodetest.Env(t, reg)
	m, err := kobject.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	out := nodetest.NewOutput()
	r := &run{src: s, env: env, out: out, m: m}
	if err := r.reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.1", "10.0.0.2"}
	if diff := cmp.Diff(want, out.Keys()); diff != "" {
		t.Fatalf("first read (-want +got)\n%s", diff)
	}
	write(t, path, "{\"ip\":\"10.0.0.1\"}\n{\"ip\":\n")
	if err := r.reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, out.Keys()); diff != "" {
		t.Errorf("a bad line lost the last good state (-want +got)\n%s", diff)
	}
	if health.State() != node.Degraded {
		t.Errorf("health %s, want degraded", health.State())
	}
	if got := testutil.ToFloat64(m.Skipped.WithLabelValues(reasonKeptLastGood)); got != 1 {
		t.Errorf("kept_last_good %v, want 1", got)
	}
	write(t, path, "{\"ip\":\"10.0.0.3\"}\n")
	if err := r.reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"10.0.0.3"}, out.Keys()); diff != "" {
		t.Errorf("fixed file (-want +got)\n%s", diff)
	}
	if health.State() != node.Healthy {
		t.Errorf("health %s after the fix", health.State())
	}
}

// TestOutputsDeclared checks the Spec's Outputs against the built source:
// every format is in exactly one case, and a source built with it emits
// what that case says, so `pipeline schema` and the reference are true.
func TestOutputsDeclared(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Spec().Outputs {
		if c.Attr != "format" {
			t.Fatalf("case on %q, want format", c.Attr)
		}
		for _, f := range c.Values {
			if seen[f] {
				t.Errorf("format %q in two cases", f)
			}
			seen[f] = true
			body := `paths = ["*.x"]` + "\nformat = \"" + f + "\""
			if f != formatKubernetes {
				body += "\nkey = \"k\""
			}
			s := mustBuild(t, t.TempDir(), body)
			if got := s.Emits(); got != c.Output {
				t.Errorf("format %q emits %q, Spec says %q", f, got, c.Output)
			}
		}
	}
	for _, f := range formats {
		if !seen[f] {
			t.Errorf("format %q is in no case of Spec().Outputs", f)
		}
	}
}

// columns is a CSV header's tail of n distinct column names.
func columns(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, ",c%d", i)
	}
	return b.String()
}
