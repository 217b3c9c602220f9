package prometheus

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
	"github.com/pipeline/pipeline/schema"
)

func TestLoadChecks(t *testing.T) {
	base := func(metric, typ, labels string) string {
		return "input = source.static.x\nmetric = " + metric + "\ntype = " + typ + "\nhelp = \"h\"\nlabels = " + labels + "\nvalue = 1\n"
	}
	for _, tc := range []struct {
		name, body, summary, detail string
	}{
		{"valid gauge", base(`"widget_ready"`, `"gauge"`, `{ name = record.key }`), "", ""},
		{"valid counter", base(`"widget_restarts_total"`, `"counter"`, `{}`), "", ""},
		{"bad character", base(`"widget-ready"`, `"gauge"`, `{}`), "Invalid metric name", "not a Prometheus metric name"},
		{"leading digit", base(`"1widget"`, `"gauge"`, `{}`), "Invalid metric name", ""},
		{"colon", base(`"widget:ready"`, `"gauge"`, `{}`), "Metric name against Prometheus conventions", "should not contain ':'"},
		{"reserved __", base(`"__widget"`, `"gauge"`, `{}`), "Reserved metric name", "Prometheus keeps them"},
		{"our own prefix", base(`"pipeline_widget"`, `"gauge"`, `{}`), "Reserved metric name", "this program's own metrics"},
		{"counter without _total", base(`"widget_restarts"`, `"counter"`, `{}`), "Metric name against Prometheus conventions", `Name a counter NAME_total`},
		{"gauge with _total", base(`"widget_total"`, `"gauge"`, `{}`), "Metric name against Prometheus conventions", "Only a counter ends in _total"},
		{"non-base unit", base(`"widget_age_milliseconds"`, `"gauge"`, `{}`), "Metric name against Prometheus conventions", `use base unit "seconds"`},
		{"abbreviated unit", base(`"widget_age_sec"`, `"gauge"`, `{}`), "Metric name against Prometheus conventions", "abbreviated units"},
		{"camelCase name", base(`"widgetReady"`, `"gauge"`, `{}`), "Metric name against Prometheus conventions", "snake_case"},
		{"type in name", base(`"widget_gauge"`, `"gauge"`, `{}`), "Metric name against Prometheus conventions", "should not include type"},
		{"label reserved __", base(`"widget_ready"`, `"gauge"`, `{ __name = "x" }`), "Reserved label name", ""},
		{"label node", base(`"widget_ready"`, `"gauge"`, `{ node = "x" }`), "Reserved label name", "node_name"},
		{"label le", base(`"widget_ready"`, `"gauge"`, `{ le = "x" }`), "Reserved label name", ""},
		{"label camelCase", base(`"widget_ready"`, `"gauge"`, `{ podName = "x" }`), "Label name against Prometheus conventions", `"podname"`},
		{"label bad char", base(`"widget_ready"`, `"gauge"`, `{ "pod-name" = "x" }`), "Invalid label name", ""},
		{"label computed", base(`"widget_ready"`, `"gauge"`, `{ (record.key) = "x" }`), "Invalid label name", "not computed"},
		{"labels not an object", base(`"widget_ready"`, `"gauge"`, `record.value`), "Invalid labels", "fixed label names"},
		{"empty help", "input = source.static.x\nmetric = \"widget_ready\"\nhelp = \"\"\nvalue = 1\n", "Empty help", ""},
		{"max_series 0", base(`"widget_ready"`, `"gauge"`, `{}`) + "max_series = 0\n", "Value out of range", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := nodetest.Build(t, Spec(), tc.body, &node.Upstream{Type: node.Records})
			if tc.summary == "" {
				if diags.HasErrors() {
					t.Fatalf("unexpected: %s", diags.Error())
				}
				return
			}
			for _, d := range diags {
				if d.Summary == tc.summary && strings.Contains(d.Detail, tc.detail) {
					if d.Subject == nil || d.Subject.Start.Line == 0 {
						t.Fatalf("diagnostic has no position: %v", d)
					}
					return
				}
			}
			t.Fatalf("want %q (%q); got %s", tc.summary, tc.detail, diags.Error())
		})
	}
}

// buildAll loads src (a whole configuration) and builds every prometheus
// sink in it, returning each diagnostic as "line: summary".
func buildAll(t *testing.T, src string) []string {
	t.Helper()
	cfg, diags := schema.NewLoader().ParseSource(t.TempDir()+"/main.hcl", []byte(src), schema.Options{Environ: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	spec := Spec()
	var out []string
	for _, nb := range cfg.Nodes {
		if nb.Kind != node.KindSink {
			continue
		}
		content, d := schema.Decode(nb.Body, spec.FullBody(), cfg.Ctx, nb.DeclRange)
		if d.HasErrors() {
			t.Fatal(d.Error())
		}
		_, d = spec.Build(node.Build{Address: nb.Address(), Name: nb.Name, Content: content, Config: cfg,
			Input: &node.Upstream{Type: node.Records}})
		for _, x := range d {
			out = append(out, lineOf(x)+": "+x.Summary+": "+x.Detail)
		}
	}
	return out
}

func lineOf(d *hcl.Diagnostic) string {
	if d.Subject == nil {
		return "?"
	}
	return d.Subject.String()[strings.LastIndex(d.Subject.String(), ":")+1:]
}

func TestFamilyDeclaredTwice(t *testing.T) {
	sink := func(name, typ, help, labels string) string {
		return `
sink "prometheus" "` + name + `" {
  input  = source.static.x
  metric = "widget_ready"
  type   = "` + typ + `"
  help   = "` + help + `"
  labels = ` + labels + `
  value  = 1
}
`
	}
	src := `source "static" "x" {
  records = {}
}
`
	t.Run("agreeing sinks share a family", func(t *testing.T) {
		got := buildAll(t, src+sink("a", "gauge", "h", `{ zone = "a", name = record.key }`)+sink("b", "gauge", "h", `{ name = record.key, zone = "b" }`))
		if len(got) != 0 {
			t.Fatalf("unexpected: %v", got)
		}
	})
	for _, tc := range []struct{ name, second, why string }{
		{"type", sink("b", "counter", "h", `{ name = record.key }`), `type "gauge" where this one has "counter"`},
		{"help", sink("b", "gauge", "other", `{ name = record.key }`), `help "h" where this one has "other"`},
		{"labels", sink("b", "gauge", "h", `{ name = record.key, zone = "b" }`), `labels [name] where this one has [name, zone]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := buildAll(t, src+sink("a", "gauge", "h", `{ name = record.key }`)+tc.second)
			var fam []string
			for _, g := range got {
				if strings.Contains(g, "Metric family declared twice") {
					fam = append(fam, g)
				}
			}
			if len(fam) != 1 || !strings.Contains(fam[0], tc.why) || !strings.Contains(fam[0], "sink.prometheus.a adds to widget_ready too (") ||
				!strings.HasPrefix(fam[0], "16,") { // the second sink's metric attribute
				t.Fatalf("diagnostics: %s", cmp.Diff(nil, got))
			}
		})
	}
}

func TestSensitiveVariableRefusedAtLoad(t *testing.T) {
	src := `variable "team" {
  type      = string
  default   = "red"
  sensitive = true
}
source "static" "x" {
  records = {}
}
sink "prometheus" "a" {
  input  = source.static.x
  metric = "widget_ready"
  help   = "h"
  labels = { team = var.team }
  value  = 1
}
`
	got := buildAll(t, src)
	if len(got) != 1 || !strings.HasPrefix(got[0], "13,") || !strings.Contains(got[0], "Sensitive value in a series") {
		t.Fatalf("diagnostics: %v", got)
	}
}
