package graph

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// diffRegistry has types with bodies, so that fingerprints see attributes,
// nested blocks, expressions, references and secrets.
func diffRegistry() *node.Registry {
	src := schema.Block{
		Attrs: []schema.Attribute{schema.String("path"), schema.Int("qps").Default(50, "50"),
			schema.String("token").Sensitive(), schema.Ref("cluster", "cluster"),
			schema.String("match")}, // also a block: two spellings of one setting, as selector is
		Blocks: []*schema.BlockType{schema.Nested("match", schema.Block{Attrs: []schema.Attribute{schema.StringList("values")}}).Repeated()},
	}
	tr := schema.Block{Attrs: []schema.Attribute{schema.Expr("key", "record")}}
	sink := schema.Block{Attrs: []schema.Attribute{schema.String("pin")}}
	return node.NewRegistry(
		node.Spec{Kind: node.KindSource, Type: "script", Summary: "test", Output: node.Records, Body: src,
			NewSource: func(node.Build) (node.Source, hcl.Diagnostics) { return sourceStub{}, nil }},
		node.Spec{Kind: node.KindTransform, Type: "pass", Summary: "test", Output: node.SameAsInput, Body: tr,
			NewTransform: func(node.Build) (node.Transform, hcl.Diagnostics) { return transformStub{}, nil }},
		node.Spec{Kind: node.KindSink, Type: "mem", Summary: "test", Body: sink,
			NewSink: func(node.Build) (node.Sink, hcl.Diagnostics) { return &memSinkStub{}, nil }},
	)
}

// sourceStub, transformStub and memSinkStub are the nodes of graphs that
// are compiled and never run.
type (
	sourceStub    struct{ node.Source }
	transformStub struct{ node.Transform }
	memSinkStub   struct{ node.Sink }
)

func diffCompile(t *testing.T, src string) *Graph {
	t.Helper()
	cfg, diags := schema.NewLoader().ParseSource("test.hcl", []byte(src), schema.Options{Environ: []string{}})
	if diags.HasErrors() {
		t.Fatalf("parse: %s", diags.Error())
	}
	g, diags := Compile(cfg, diffRegistry())
	if diags.HasErrors() {
		t.Fatalf("compile: %s", diags.Error())
	}
	g.Fingerprints()
	return g
}

const diffBase = `
variable "dir" {
  default = "/run"
}
variable "secret" {
  default   = "hunter2"
  sensitive = true
}
locals {
  p = "${var.dir}/pods"
}
cluster "prod" {
  endpoint = "https://10.0.0.1:6443"
  token    = "tok-1"
}
source "script" "a" {
  path    = local.p
  token   = var.secret
  cluster = cluster.prod
  match {
    values = ["x", "y"]
  }
}
source "script" "b" {}
transform "pass" "t" {
  input = source.script.a
  key   = record.ip # the key
}
sink "mem" "m" {
  input = transform.pass.t
  pin   = "/sys/fs/bpf/a"
}
sink "mem" "n" {
  input = source.script.b
  pin   = "/sys/fs/bpf/b"
}
`

func TestDiffGraphs(t *testing.T) {
	edit := func(old, new string) string {
		if !strings.Contains(diffBase, old) {
			t.Fatalf("base has no %q", old)
		}
		return strings.Replace(diffBase, old, new, 1)
	}
	type row struct {
		Address string
		Action  Action
		Changed []string
	}
	kept := func(addrs ...string) []row {
		var out []row
		for _, a := range addrs {
			out = append(out, row{Address: a, Action: Kept})
		}
		return out
	}
	allKept := kept("sink.mem.m", "sink.mem.n", "source.script.a", "source.script.b", "transform.pass.t")
	tests := []struct {
		name   string
		config string
		want   []row
		relist []string
	}{
		{name: "same text", config: diffBase, want: allKept},
		{name: "layout and comments only", config: edit("key   = record.ip # the key", "key = record . ip\n  // moved"), want: allKept},
		{name: "default written out", config: edit("source \"script\" \"b\" {}", "source \"script\" \"b\" {\n  qps = 50\n}"), want: allKept},
		{name: "same value through a variable", config: edit("path    = local.p", "path = \"/run/pods\""), want: allKept},
		{name: "sink attribute", config: edit(`"/sys/fs/bpf/b"`, `"/sys/fs/bpf/c"`), want: []row{
			{"sink.mem.m", Kept, nil}, {"sink.mem.n", Rebuilt, []string{"pin"}},
			{"source.script.a", Kept, nil}, {"source.script.b", Kept, nil}, {"transform.pass.t", Kept, nil}}},
		{name: "variable value reaches the source and everything after it", config: edit(`default = "/run"`, `default = "/var/run"`),
			relist: []string{"source.script.a"}, want: []row{
				{"sink.mem.m", Rebuilt, []string{"input"}}, {"sink.mem.n", Kept, nil},
				{"source.script.a", Rebuilt, []string{"path"}}, {"source.script.b", Kept, nil},
				{"transform.pass.t", Rebuilt, []string{"input"}}}},
		{name: "expression", config: edit("record.ip", "record.addr"), want: []row{
			{"sink.mem.m", Rebuilt, []string{"input"}}, {"sink.mem.n", Kept, nil},
			{"source.script.a", Kept, nil}, {"source.script.b", Kept, nil}, {"transform.pass.t", Rebuilt, []string{"key"}}}},
		{name: "sensitive variable", config: edit(`"hunter2"`, `"hunter3"`), relist: []string{"source.script.a"}, want: []row{
			{"sink.mem.m", Rebuilt, []string{"input"}}, {"sink.mem.n", Kept, nil},
			{"source.script.a", Rebuilt, []string{"token"}}, {"source.script.b", Kept, nil}, {"transform.pass.t", Rebuilt, []string{"input"}}}},
		{name: "cluster token", config: edit(`"tok-1"`, `"tok-2"`), relist: []string{"source.script.a"}, want: []row{
			{"sink.mem.m", Rebuilt, []string{"input"}}, {"sink.mem.n", Kept, nil},
			{"source.script.a", Rebuilt, []string{"cluster"}}, {"source.script.b", Kept, nil}, {"transform.pass.t", Rebuilt, []string{"input"}}}},
		{name: "nested block", config: edit(`["x", "y"]`, `["x"]`), relist: []string{"source.script.a"}, want: []row{
			{"sink.mem.m", Rebuilt, []string{"input"}}, {"sink.mem.n", Kept, nil},
			{"source.script.a", Rebuilt, []string{"match"}}, {"source.script.b", Kept, nil}, {"transform.pass.t", Rebuilt, []string{"input"}}}},
		{name: "attribute named as a block", config: edit("source \"script\" \"b\" {}", "source \"script\" \"b\" {\n  match = \"app=web\"\n}"),
			relist: []string{"source.script.b"}, want: []row{
				{"sink.mem.m", Kept, nil}, {"sink.mem.n", Rebuilt, []string{"input"}},
				{"source.script.a", Kept, nil}, {"source.script.b", Rebuilt, []string{"match"}}, {"transform.pass.t", Kept, nil}}},
		{name: "rewired input", config: strings.Replace(edit("input = source.script.b", "input = transform.pass.t"), "source \"script\" \"b\" {}", "", 1), want: []row{
			{"sink.mem.m", Kept, nil}, {"sink.mem.n", Rebuilt, []string{"input"}},
			{"source.script.a", Kept, nil}, {"source.script.b", Removed, nil}, {"transform.pass.t", Kept, nil}}},
		{name: "fan-in: its second input rebuilt", config: edit("input = source.script.b", "inputs = [transform.pass.t, source.script.b]"), want: []row{
			{"sink.mem.m", Kept, nil}, {"sink.mem.n", Rebuilt, []string{"input", "inputs"}},
			{"source.script.a", Kept, nil}, {"source.script.b", Kept, nil}, {"transform.pass.t", Kept, nil}}},
		{name: "added and removed", config: edit(`sink "mem" "n"`, `sink "mem" "n2"`), want: []row{
			{"sink.mem.m", Kept, nil}, {"sink.mem.n", Removed, nil}, {"sink.mem.n2", Added, nil},
			{"source.script.a", Kept, nil}, {"source.script.b", Kept, nil}, {"transform.pass.t", Kept, nil}}},
	}
	old := diffCompile(t, diffBase)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := DiffGraphs(old, diffCompile(t, tt.config))
			var got []row
			for _, n := range d.Nodes {
				got = append(got, row{n.Address, n.Action, n.Changed})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.relist, d.Relist); diff != "" {
				t.Errorf("relist (-want +got):\n%s", diff)
			}
			if want := !cmp.Equal(tt.want, allKept); d.Changed() != want {
				t.Errorf("Changed() = %v, want %v", d.Changed(), want)
			}
		})
	}
}

// A fan-in's fingerprint holds every input's: rebuilding any of them
// rebuilds the union's consumer.
func TestDiffGraphsFanInInputs(t *testing.T) {
	base := strings.Replace(diffBase, "input = source.script.b", "inputs = [transform.pass.t, source.script.b]", 1)
	old := diffCompile(t, base)
	for _, edit := range [][2]string{{`"/run"`, `"/var/run"`}, {"source \"script\" \"b\" {}", "source \"script\" \"b\" {\n  qps = 7\n}"}} {
		d := DiffGraphs(old, diffCompile(t, strings.Replace(base, edit[0], edit[1], 1)))
		if a, _ := d.Action("sink.mem.n"); a != Rebuilt {
			t.Errorf("%s -> %s: sink.mem.n %s, want rebuilt", edit[0], edit[1], a)
		}
	}
	if d := DiffGraphs(old, diffCompile(t, base)); d.Changed() {
		t.Errorf("the same fan-in configuration changes: %+v", d.Nodes)
	}
}

func TestDiffGraphsFromNothing(t *testing.T) {
	g := diffCompile(t, diffBase)
	d := DiffGraphs(nil, g)
	if got := d.Count(); got[Added] != 5 || len(got) != 1 {
		t.Errorf("Count() = %v, want 5 added", got)
	}
	if diff := cmp.Diff([]string{"source.script.a", "source.script.b"}, d.Relist); diff != "" {
		t.Errorf("relist (-want +got):\n%s", diff)
	}
	if a, ok := d.Action("sink.mem.m"); !ok || a != Added {
		t.Errorf("Action(sink.mem.m) = %v, %v", a, ok)
	}
	if _, ok := d.Action("sink.mem.zz"); ok {
		t.Error("Action of an unknown address reports ok")
	}
	d = DiffGraphs(g, nil)
	if got := d.Count(); got[Removed] != 5 || len(got) != 1 || d.Relist != nil {
		t.Errorf("Count() = %v, relist %v, want 5 removed and no relist", got, d.Relist)
	}
}

// No secret reaches a fingerprint or a part digest in clear, and a secret
// is keyed: the same secret in two nodes is not recognisable by its digest.
func TestFingerprintHidesSecrets(t *testing.T) {
	g := diffCompile(t, diffBase)
	for _, n := range g.Nodes {
		if n.Fingerprint == "" {
			t.Errorf("%s: no fingerprint", n.Address)
		}
		all := n.Fingerprint + strings.Join(mapValues(n.Parts), " ")
		for _, secret := range []string{"hunter2", "tok-1"} {
			if strings.Contains(all, secret) {
				t.Errorf("%s: fingerprint holds %q in clear", n.Address, secret)
			}
		}
		if n.Parts["token"] == digest("set", "value:"+valueText(mustString("hunter2"))) {
			t.Errorf("%s: the token's digest is the plain digest of its value", n.Address)
		}
	}
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func mustString(s string) cty.Value { return cty.StringVal(s) }
