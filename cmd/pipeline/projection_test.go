package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestProjection checks what the compiler derives a kubernetes source's
// objects are read for, through extract, filter and pass-through
// transforms, and the warnings that come with it.
func TestProjection(t *testing.T) {
	const src = "source \"kubernetes\" \"pods\" {\n  resource = \"pods\"\n%s}\n"
	tests := []struct {
		name, source, rest string
		want               string // the projection, or "whole"
		warn               string // a warning summary expected, if any
		detail             string // and text its detail holds, with where
	}{
		{name: "flagship", rest: `
transform "extract" "ips" {
  input = source.kubernetes.pods
  where = try(object.status.podIP, "") != ""
  key   = object.status.podIP
  value = { pod = object.metadata.name, ns = object.metadata["namespace"] }
}
sink "log" "out" { input = transform.extract.ips }`,
			want: ".metadata.name .metadata.namespace .status.podIP"},
		{name: "for_each, jsonpath and index_by", source: "  index_by = [\"{.metadata.uid}\"]\n", rest: `
transform "extract" "ips" {
  input    = source.kubernetes.pods
  for_each = object.status.podIPs
  key      = each.value.ip
  value    = { node = jsonpath(object, "{.spec.nodeName}"), c = jsonpath(object.spec, "{.containers[*].name}") }
}
sink "log" "out" { input = transform.extract.ips }`,
			want: ".spec.containers .spec.nodeName .status.podIPs"},
		{name: "filter and debounce pass objects on", rest: `
transform "filter" "web" {
  input = source.kubernetes.pods
  where = record.value.metadata.labels.tier == "web" && record.key != ""
}
transform "debounce" "d" {
  input    = transform.filter.web
  interval = "1s"
}
transform "extract" "ips" {
  input = transform.debounce.d
  key   = object.status.podIP
}
sink "log" "out" { input = transform.extract.ips }`,
			want: ".metadata.labels.tier .status.podIP"},
		{name: "whole object passed to a function", rest: `
transform "extract" "ips" {
  input = source.kubernetes.pods
  key   = jsonencode(object)
}
sink "log" "out" { input = transform.extract.ips }`,
			want: "whole", warn: "Expression reads the whole object"},
		{name: "computed jsonpath template", rest: `
variable "path" {
  type    = string
  default = "{.status.podIP}"
}
transform "extract" "ips" {
  input = source.kubernetes.pods
  key   = jsonpath(object, "${var.path}")
}
sink "log" "out" { input = transform.extract.ips }`,
			want: ".status.podIP"},
		{name: "ignored field read", source: "  ignore_fields = [\"{.spec}\"]\n", rest: `
transform "extract" "ips" {
  input = source.kubernetes.pods
  key   = object.metadata.name
  value = { node = try(object.spec.nodeName, "") }
}
sink "log" "out" { input = transform.extract.ips }`,
			want: ".metadata.name .spec.nodeName", warn: "Ignored field is read"},
		{name: "field not in the schema", rest: `
transform "extract" "ips" {
  input = source.kubernetes.pods
  where = try(object.status.podIp, "") != ""
  key   = object.status.podIP
  value = { app = object.metadata.labels.app, ann = object.metadata.annotations["a/b"] }
}
sink "log" "out" { input = transform.extract.ips }`,
			want: ".metadata.annotations.a/b .metadata.labels.app .status.podIP .status.podIp", warn: "Field not in the resource's schema",
			detail: `p.hcl:7,15-34: Pod objects (resource "pods") have no field .status.podIp, so reading it always yields nothing (an error, or the fallback of try()). Did you mean "podIP"?`},
		{name: "field below a list", rest: `
transform "extract" "ips" {
  input = source.kubernetes.pods
  key   = object.metadata.name
  value = { c = try(object.spec.containers.name, "") }
}
sink "log" "out" { input = transform.extract.ips }`,
			want: ".metadata.name .spec.containers.name", warn: "Field not in the resource's schema", detail: "have no field .spec.containers.name"},
		{name: "custom resources are not checked", source: "  group = \"example.com\"\n  version = \"v1\"\n", rest: `
transform "extract" "ips" {
  input = source.kubernetes.pods
  key   = object.spec.anything.at.all
}
sink "log" "out" { input = transform.extract.ips }`,
			want: ".spec.anything.at.all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			f := filepath.Join(dir, "p.hcl")
			body := strings.Replace(src, "%s", tt.source, 1) + tt.rest
			if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			l := load([]string{f}, nil)
			var warns, details []string
			for _, d := range l.diags {
				if d.Severity == 1 {
					t.Fatalf("%s", d)
				}
				warns = append(warns, d.Summary)
				where := ""
				if d.Subject != nil {
					where = fmt.Sprintf("%s:%d,%d-%d: ", filepath.Base(d.Subject.Filename), d.Subject.Start.Line, d.Subject.Start.Column, d.Subject.End.Column)
				}
				details = append(details, where+d.Detail)
			}
			if tt.detail != "" && !strings.Contains(strings.Join(details, "|"), tt.detail) {
				t.Errorf("warning details %q, want one holding %q", details, tt.detail)
			}
			if tt.warn != "" && !strings.Contains(strings.Join(warns, "|"), tt.warn) {
				t.Errorf("warnings %q, want %q", warns, tt.warn)
			}
			if tt.warn == "" && len(warns) > 0 {
				t.Errorf("unexpected warnings %q", warns)
			}
			got := "whole"
			if p := l.graph.Node("source.kubernetes.pods").Projection; p != nil {
				got = strings.Join(p.List(), " ")
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("projection (-want +got)\n%s", diff)
			}
		})
	}
}
