package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/cmd/pipeline/view"
	"github.com/pipeline/pipeline/engine/graph"
	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/internal/ctyconv"
	"github.com/pipeline/pipeline/schema"
	"github.com/pipeline/pipeline/sources/static"
)

var update = flag.Bool("update", false, "rewrite golden files and script expectations")

// A line that must produce a diagnostic ends with `# ERROR: <summary>` or
// `# WARNING: <summary>` (STYLE.md §8); a line may carry several markers.
var markerRE = regexp.MustCompile(`#\s*(ERROR|WARNING):\s*([^#]*[^#\s])`)

// corpusCases lists the cases of a corpus directory: each *.hcl file, and
// each sub-directory (a configuration of several files, loaded together).
func corpusCases(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if e.IsDir() {
			if files, _ := filepath.Glob(filepath.Join(path, "*.hcl")); len(files) == 0 {
				continue // a data directory, not a case
			}
		} else if filepath.Ext(e.Name()) != ".hcl" {
			continue
		}
		out = append(out, path)
	}
	return out
}

// caseFiles returns the .hcl files of a case.
func caseFiles(t testing.TB, path string) []string {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !st.IsDir() {
		return []string{path}
	}
	files, err := filepath.Glob(filepath.Join(path, "*.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// markers reads the expected diagnostics of a case: "file:line" -> the
// sorted "SEVERITY: summary" entries of that line, joined with " | ".
func markers(t *testing.T, files []string) map[string]string {
	t.Helper()
	lists := map[string][]string{}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			for _, m := range markerRE.FindAllStringSubmatch(line, -1) {
				key := fmt.Sprintf("%s:%d", filepath.Base(f), i+1)
				lists[key] = append(lists[key], m[1]+": "+m[2])
			}
		}
	}
	return joinSorted(lists)
}

// requiresRE matches a case's `# requires: KIND.TYPE, ...` line: the node
// types written (in their own packages) but not yet listed in nodes.go. Such
// a case is skipped until they are, then runs (and -update adds it to the
// golden file).
var requiresRE = regexp.MustCompile(`(?m)^#\s*requires:\s*(.+)$`)

func missingTypes(t *testing.T, files []string, reg *node.Registry) []string {
	t.Helper()
	var missing []string
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range requiresRE.FindAllStringSubmatch(string(src), -1) {
			for _, addr := range strings.Split(m[1], ",") {
				kind, typ, _ := strings.Cut(strings.TrimSpace(addr), ".")
				if _, ok := reg.Lookup(node.Kind(kind), typ); !ok {
					missing = append(missing, strings.TrimSpace(addr))
				}
			}
		}
	}
	return missing
}

// diagLines is the same map built from diagnostics.
func diagLines(diags hcl.Diagnostics) map[string]string {
	lists := map[string][]string{}
	for _, d := range diags {
		key := "(no position)"
		if d.Subject != nil {
			key = fmt.Sprintf("%s:%d", filepath.Base(d.Subject.Filename), d.Subject.Start.Line)
		}
		sev := "ERROR"
		if d.Severity == hcl.DiagWarning {
			sev = "WARNING"
		}
		lists[key] = append(lists[key], sev+": "+d.Summary)
	}
	return joinSorted(lists)
}

func joinSorted(lists map[string][]string) map[string]string {
	out := make(map[string]string, len(lists))
	for k, l := range lists {
		slices.Sort(l)
		out[k] = strings.Join(l, " | ")
	}
	return out
}

// TestInvalidCorpus loads every broken configuration of testdata/invalid and
// compares its diagnostics with the markers written in the files. It also
// renders every case into testdata/invalid.golden, the exact text users see.
func TestInvalidCorpus(t *testing.T) {
	var golden bytes.Buffer
	cases := corpusCases(t, filepath.Join("testdata", "invalid"))
	if len(cases) < 45 {
		t.Errorf("the invalid corpus holds %d cases, want at least 45", len(cases))
	}
	reg := registry()
	done := 0 // cases rendered or skipped: the golden file is checked only after a full run
	for _, path := range cases {
		t.Run(filepath.Base(path), func(t *testing.T) {
			if missing := missingTypes(t, caseFiles(t, path), reg); len(missing) > 0 {
				done++
				t.Skipf("waits for %s in cmd/pipeline/nodes.go", strings.Join(missing, ", "))
			}
			want := markers(t, caseFiles(t, path))
			if len(want) == 0 {
				t.Fatalf("%s has no # ERROR: or # WARNING: marker", path)
			}
			l := loadWith([]string{path}, schema.Options{Environ: []string{}}, reg)
			if diff := cmp.Diff(want, diagLines(l.diags)); diff != "" {
				t.Errorf("diagnostics (-markers +got):\n%s", diff)
			}
			for _, d := range l.diags {
				if d.Subject == nil || d.Subject.Start.Line < 1 || d.Subject.Start.Column < 1 {
					t.Errorf("diagnostic %q has no source position: %+v", d.Summary, d.Subject)
				}
				if d.Detail == "" {
					t.Errorf("diagnostic %q has no detail", d.Summary)
				}
			}
			fmt.Fprintf(&golden, "### %s\n\n", filepath.ToSlash(path))
			view.WriteDiagsText(&golden, l.files, l.diags)
			done++
		})
	}
	if done < len(cases) {
		t.Logf("%d of %d cases ran: testdata/invalid.golden not checked", done, len(cases))
		return
	}
	checkGolden(t, filepath.Join("testdata", "invalid.golden"), golden.Bytes())
}

// checkGolden compares got with the golden file, or rewrites it with -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/pipeline -update)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s is stale (-want +got); run go test ./cmd/pipeline -update and review the diff:\n%s", path, diff)
	}
}

// validOptions are the -var and environment settings each valid case loads
// with; a case not listed loads with none (and an empty environment).
var validOptions = map[string]schema.Options{
	"language.hcl": {
		Vars: []string{"region=eu-west", "enabled=true", `zones=["a", "b", "c"]`},
		Environ: []string{"PIPELINE_VAR_port=4333", "PIPELINE_VAR_from_env=hello", "PIPELINE_TEST_HOME=/home/test",
			"PIPELINE_VAR_undeclared=ignored"},
	},
}

// validChecks check evaluated values beyond "no diagnostics".
var validChecks = map[string]func(t *testing.T, g *graph.Graph){
	"language.hcl": checkLanguage,
	"transforms.hcl": func(t *testing.T, g *graph.Graph) {
		var got []string
		for _, n := range g.Nodes {
			in := ""
			if n.Input() != nil {
				in = n.Input().Address + " -> "
			}
			got = append(got, fmt.Sprintf("%s%s (%s)", in, n.Address, n.Emits))
		}
		want := []string{
			"source.static.hosts (records)",
			"source.static.hosts -> transform.extract.ips (records)",
			"transform.extract.ips -> transform.filter.frontend (records)",
			"transform.filter.frontend -> transform.debounce.batch (records)",
			"transform.debounce.batch -> transform.grace_period.drain (records)",
			"transform.grace_period.drain -> sink.nats_kv.allowed ()",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("graph (-want +got):\n%s", diff)
		}
	},
	"multi": func(t *testing.T, g *graph.Graph) {
		want := map[string]any{
			"10.0.0.0/8":     map[string]any{"network": "internal", "env": "PROD"},
			"192.168.0.0/16": map[string]any{"network": "office", "env": "PROD"},
		}
		if diff := cmp.Diff(want, staticRecords(t, g, "source.static.networks")); diff != "" {
			t.Errorf("records (-want +got):\n%s", diff)
		}
	},
}

// TestValidCorpus loads every configuration of testdata/valid: none may
// produce a diagnostic, not even a warning.
func TestValidCorpus(t *testing.T) {
	for _, path := range corpusCases(t, filepath.Join("testdata", "valid")) {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			opts, ok := validOptions[name]
			if !ok {
				opts = schema.Options{Environ: []string{}}
			}
			l := loadWith([]string{path}, opts, registry())
			if len(l.diags) > 0 {
				var buf bytes.Buffer
				view.WriteDiagsText(&buf, l.files, l.diags)
				t.Fatalf("want no diagnostics, got:\n%s", buf.String())
			}
			if check := validChecks[name]; check != nil {
				check(t, l.graph)
			}
		})
	}
}

func staticRecords(t *testing.T, g *graph.Graph, addr string) map[string]any {
	t.Helper()
	n := g.Node(addr)
	if n == nil {
		t.Fatalf("no node %s", addr)
	}
	src, ok := n.Source.(*static.Source)
	if !ok {
		t.Fatalf("%s is %T, not a static source", addr, n.Impl())
	}
	out := map[string]any{}
	for _, r := range src.Records() {
		out[r.Key] = ctyconv.FromCty(r.Value)
	}
	return out
}

func checkLanguage(t *testing.T, g *graph.Graph) {
	want := map[string]any{
		"region":    "eu-west",            // -var
		"port":      int64(4333),          // PIPELINE_VAR_port
		"enabled":   true,                 // -var, bool parsed as HCL
		"zones":     []any{"a", "b", "c"}, // -var, list parsed as HCL
		"labels":    map[string]any{"team": "net", "tier": "edge"},
		"limits":    map[string]any{"max": int64(10), "unit": "MiB"},
		"ports":     []any{int64(80), int64(443)}, // a set: sorted, duplicates gone
		"pair":      []any{"x", int64(1)},
		"anything":  map[string]any{"nested": []any{int64(1), int64(2)}},
		"from_env":  "hello",
		"subnet":    "10.2.0.0/16",
		"gateway":   "10.2.0.1",
		"last_host": "10.2.255.254",
		"v6_subnet": "fd00:0:0:1::/64",
		"name":      "eu-west-pod",
		"shout":     "EU-WEST-POD",
		"parts":     []any{"a", "b", "c"},
		"greeting":  "eu-west has 3 zones",
		"doc":       `{"port":4333,"region":"eu-west"}`,
		"decoded":   map[string]any{"port": int64(4333), "region": "eu-west"},
		"home":      "/home/test",
		"unset":     "",
		"motd":      "Welcome to the pipeline.",
		"state":     "on",
		"doubled":   []any{"aa", "bb", "cc"},
		"index":     map[string]any{"a": int64(0), "b": int64(1), "c": int64(2)},
		"listing":   "[a][b][c]",
		"banner":    "region eu-west\nzones  a,b,c\n",
	}
	if diff := cmp.Diff(want, staticRecords(t, g, "source.static.values")); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	cfg := g.Config
	remote := cfg.Clusters["remote"]
	ca, err := remote.CACertPEM() // read when a client is built, not by validate
	if remote == nil || remote.TokenFile != filepath.Join("testdata", "valid", "data", "token") || err != nil ||
		!bytes.Contains(ca, []byte("BEGIN CERTIFICATE")) || remote.QPS != 20 || remote.Burst != 40 {
		t.Errorf("cluster remote = %+v", remote)
	}
	if local := cfg.Clusters["local"]; local == nil || local.Context != "kind-eu-west-pod" ||
		local.Kubeconfig != filepath.Join("testdata", "valid", "data", "kubeconfig") {
		t.Errorf("cluster local = %+v", local)
	}
	if in := cfg.Clusters["inside"]; in == nil || !in.InCluster {
		t.Errorf("cluster inside = %+v", in)
	}
	if !slices.Contains(cfg.Sensitive, "s3cr3t") {
		t.Errorf("the sensitive variable's value is not in Config.Sensitive: %q", cfg.Sensitive)
	}
	for _, addr := range []string{"sink.log.out", "sink.audit.trail", "sink.nats.events", "sink.nats_kv.state"} {
		n := g.Node(addr)
		if n == nil || n.Sink == nil || n.Input() == nil || n.Input().Address != "source.static.values" {
			t.Errorf("%s is not built from source.static.values: %+v", addr, n)
		}
	}
	if out := g.Node("sink.log.out"); out != nil && (out.Prune || out.Resync != 0) {
		t.Errorf("sink.log.out: prune=%v resync=%v, want false and 0", out.Prune, out.Resync)
	}
}

// TestOptionErrors covers the diagnostics that come from command-line
// options and the environment rather than from a file: some have no source
// position, and those about a variable's value point at its declaration.
func TestOptionErrors(t *testing.T) {
	fixture := filepath.Join("testdata", "options", "vars.hcl")
	empty := t.TempDir()
	tests := []struct {
		name    string
		paths   []string
		opts    schema.Options
		want    map[string]string
		forbid  string // text no diagnostic may contain (a secret)
		wantDet string // text some detail must contain
	}{
		{name: "undeclared -var", paths: []string{fixture}, opts: schema.Options{Vars: []string{"prot=1"}},
			want: map[string]string{"(no position)": "ERROR: Undeclared variable"}, wantDet: `Did you mean "port"?`},
		{name: "-var without =", paths: []string{fixture}, opts: schema.Options{Vars: []string{"port"}},
			want: map[string]string{"(no position)": "ERROR: Invalid -var option"}},
		{name: "-var not a number", paths: []string{fixture}, opts: schema.Options{Vars: []string{"port=abc"}},
			want: map[string]string{"vars.hcl:2": "ERROR: Invalid value for variable"}, wantDet: `"abc" given with -var port`},
		{name: "-var not a list", paths: []string{fixture}, opts: schema.Options{Vars: []string{`zones=["a",`}},
			want: map[string]string{"vars.hcl:7": "ERROR: Invalid value for variable"}},
		{name: "environment not a number", paths: []string{fixture},
			opts: schema.Options{Environ: []string{"PIPELINE_VAR_port={}"}},
			want: map[string]string{"vars.hcl:2": "ERROR: Invalid value for variable"}, wantDet: "PIPELINE_VAR_port"},
		{name: "sensitive value is not printed", paths: []string{fixture}, opts: schema.Options{Vars: []string{"pin=hunter2"}},
			want: map[string]string{"vars.hcl:12": "ERROR: Invalid value for variable"}, forbid: "hunter2"},
		{name: "-var wins over the environment", paths: []string{fixture},
			opts: schema.Options{Vars: []string{"port=1"}, Environ: []string{"PIPELINE_VAR_port=x"}},
			want: map[string]string{}},
		{name: "no path", paths: nil, want: map[string]string{"(no position)": "ERROR: Cannot read configuration"}},
		{name: "missing path", paths: []string{filepath.Join("testdata", "nope.hcl")},
			want: map[string]string{"(no position)": "ERROR: Cannot read configuration"}},
		{name: "directory without files", paths: []string{empty},
			want: map[string]string{"(no position)": "ERROR: Cannot read configuration"}, wantDet: "holds no *.hcl file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.opts.Environ == nil {
				tt.opts.Environ = []string{}
			}
			l := loadWith(tt.paths, tt.opts, registry())
			if diff := cmp.Diff(tt.want, diagLines(l.diags)); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
			var text bytes.Buffer
			view.WriteDiagsText(&text, l.files, l.diags)
			if tt.forbid != "" && strings.Contains(text.String(), tt.forbid) {
				t.Errorf("output shows %q:\n%s", tt.forbid, text.String())
			}
			if tt.wantDet != "" && !strings.Contains(text.String(), tt.wantDet) {
				t.Errorf("output lacks %q:\n%s", tt.wantDet, text.String())
			}
		})
	}
}
