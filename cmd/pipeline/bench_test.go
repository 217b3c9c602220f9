package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// bigConfig writes a realistic configuration of n node blocks in groups of
// four. Even groups: a static source, an extract and a filter transform and
// a sink (nats_kv, nats or log in turn). Odd groups, the flagship shape:
// kubernetes, extract, debounce and ebpf_map. Attributes use variables,
// locals, functions and templates.
func bigConfig(n int) string {
	var b strings.Builder
	b.WriteString(header)
	for i := range n / 4 {
		if i%2 == 1 {
			fmt.Fprintf(&b, podGroup, i)
			continue
		}
		fmt.Fprintf(&b, staticGroup, i)
		fmt.Fprintf(&b, staticSinks[(i/2)%len(staticSinks)], i)
	}
	return b.String()
}

const header = `variable "nats_url" {
  type    = string
  default = "nats://nats.pipeline.svc:4222"
}

variable "env" {
  type    = string
  default = "prod"
}

locals {
  base    = "10.0.0.0/8"
  prefix  = upper(var.env)
  subject = "pods.${lower(local.prefix)}"
}

cluster "prod" {
  in_cluster = true
}
`

const staticGroup = `
source "static" "hosts_%[1]d" {
  records = {
    "web-%[1]d" = { ips = [cidrhost(cidrsubnet(local.base, 16, %[1]d), 1), cidrhost(cidrsubnet(local.base, 16, %[1]d), 2)], role = "frontend" }
    "db-%[1]d"  = { ips = [cidrhost(cidrsubnet(local.base, 16, %[1]d), 9)], role = format("backend-%%d", %[1]d) }
  }
}

transform "extract" "ips_%[1]d" {
  input    = source.static.hosts_%[1]d
  where    = object.role != ""
  for_each = object.ips
  key      = "${each.value}/32"
  value    = { role = object.role, env = var.env }
}

transform "filter" "keep_%[1]d" {
  input = transform.extract.ips_%[1]d
  where = record.value.role == "frontend" || substr(record.key, 0, 3) == "10."
}
`

var staticSinks = []string{`
sink "nats_kv" "out_%[1]d" {
  input      = transform.filter.keep_%[1]d
  url        = var.nats_url
  bucket     = "pods-%[1]d"
  key_prefix = "${var.env}/"
  storage    = "memory"
}
`, `
sink "nats" "out_%[1]d" {
  input     = transform.filter.keep_%[1]d
  url       = var.nats_url
  subject   = "${local.subject}.%[1]d.${replace(record.key, "/", "_")}"
  jetstream = true
  resync    = "10m"
}
`, `
sink "log" "out_%[1]d" {
  input  = transform.filter.keep_%[1]d
  format = "json"
  path   = "logs/${var.env}-%[1]d.log"
  prune  = false
}
`}

const podGroup = `
source "kubernetes" "pods_%[1]d" {
  cluster       = cluster.prod
  resource      = "pods"
  namespace     = "team-%[1]d"
  selector      = "app=backend,env in (prod,staging)"
  ignore_fields = ["{.metadata.managedFields}"]
}

transform "extract" "pod_ips_%[1]d" {
  input    = source.kubernetes.pods_%[1]d
  where    = try(object.status.phase, "") == "Running"
  for_each = try(object.status.podIPs, [])
  key      = each.value.ip
  value    = { pod = object.metadata.name }
}

transform "debounce" "batch_%[1]d" {
  input    = transform.extract.pod_ips_%[1]d
  interval = "100ms"
  max_wait = "1s"
}

sink "ebpf_map" "allowed_%[1]d" {
  input = transform.debounce.batch_%[1]d
  pin   = "/sys/fs/bpf/pipeline/allowed_%[1]d"
  key {
    type = "ip"
  }
  value {
    type = "u32"
    from = 1
  }
}
`

// BenchmarkValidate1000 measures `pipeline validate` on 1,000 blocks:
// parse, variables, locals, every node body and the graph. Goal: <= 100 ms
// per validate on 2 cores. "cli" runs with the GC setting the validate
// command uses (tuneGC); "gogc100" with Go's default, for comparison.
func BenchmarkValidate1000(b *testing.B) {
	path := filepath.Join(b.TempDir(), "big.hcl")
	if err := os.WriteFile(path, []byte(bigConfig(1000)), 0o644); err != nil {
		b.Fatal(err)
	}
	if l := load([]string{path}, nil); len(l.diags) > 0 || len(l.graph.Nodes) != 1000 {
		b.Fatalf("the generated configuration does not validate cleanly: %s", l.diags.Error())
	}
	for _, bc := range []struct {
		name string
		gogc int
	}{{"cli", shortLivedGCPercent}, {"gogc100", 100}} {
		b.Run(bc.name, func(b *testing.B) {
			defer debug.SetGCPercent(debug.SetGCPercent(bc.gogc))
			b.ReportAllocs()
			for b.Loop() {
				if l := load([]string{path}, nil); l.diags.HasErrors() {
					b.Fatal(l.diags.Error())
				}
			}
		})
	}
}

// BenchmarkValidate10000 is BenchmarkValidate1000 on 10,000 blocks, with
// the validate command's GC setting: loading is linear in the number of
// blocks, so it takes about ten times as long.
func BenchmarkValidate10000(b *testing.B) {
	path := filepath.Join(b.TempDir(), "big.hcl")
	if err := os.WriteFile(path, []byte(bigConfig(10000)), 0o644); err != nil {
		b.Fatal(err)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(shortLivedGCPercent))
	b.ReportAllocs()
	for b.Loop() {
		if l := load([]string{path}, nil); len(l.diags) > 0 || len(l.graph.Nodes) != 10000 {
			b.Fatalf("the generated configuration does not validate cleanly: %s", l.diags.Error())
		}
	}
}
