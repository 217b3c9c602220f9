package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipeline/pipeline/internal/natstest"
)

// A diagnostic HCL builds from a value ("Duplicate object key" quotes the
// key) shows no value derived from a sensitive variable, in any command,
// whether the variable comes from its default or PIPELINE_VAR_.
func TestDerivedSecretsNotInHCLDiagnostics(t *testing.T) {
	const secret = "hunter2-xyz"
	derived := []string{strings.ToUpper(secret), strings.ReplaceAll(secret, "-", "_"), strings.Join(strings.Split(secret, ""), "-"), secret[:8]}
	exprs := []string{`upper(var.tok)`, `replace(var.tok, "-", "_")`, `join("-", split("", var.tok))`, `format("%.8s", var.tok)`}
	for i, e := range exprs {
		t.Run(e, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "p.hcl")
			writeConfig(t, cfg, fmt.Sprintf(`
variable "tok" {
  type      = string
  sensitive = true
  default   = %q
}
locals {
  dup = { for c in ["a", "b"] : %s => c }
}
source "static" "s" {
  records = { a = 1 }
}
sink "log" "out" {
  input = source.static.s
  path  = "-"
}
`, secret, e))
			for _, args := range [][]string{{"validate"}, {"validate", "-json"}, {"plan"}, {"plan", "--json"}, {"graph"}, {"run"}} {
				out, code := planCLI(append(args, cfg)...)
				if code == 0 || !strings.Contains(out, "Duplicate object key") {
					t.Errorf("%v: exit %d, want the diagnostic:\n%s", args, code, out)
				}
				for _, s := range append([]string{secret}, derived[i]) {
					if strings.Contains(out, s) {
						t.Errorf("%v shows %q:\n%s", args, s, out)
					}
				}
			}
			t.Setenv("PIPELINE_VAR_tok", "other-secret")
			out, _ := planCLI("validate", cfg)
			if strings.Contains(out, "OTHER-SECRET") || strings.Contains(out, "other-secret") || strings.Contains(out, "other_secret") {
				t.Errorf("validate with PIPELINE_VAR_tok shows it:\n%s", out)
			}
		})
	}
}

// A NATS subject built from a secret is masked by plan, as by run.
func TestPlanMasksSecretSubject(t *testing.T) {
	srv := natstest.Embedded(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "p.hcl")
	writeConfig(t, cfg, fmt.Sprintf(`
variable "tenant" {
  type      = string
  sensitive = true
  default   = "acme-secret"
}
source "static" "s" {
  records = { a = 1 }
}
sink "nats" "out" {
  input   = source.static.s
  url     = %q
  subject = "events.${upper(var.tenant)}.${record.key}"
}
`, srv.URL()))
	for _, args := range [][]string{{"plan"}, {"plan", "--json"}} {
		out, code := planCLI(append(args, cfg)...)
		if code == 1 || !strings.Contains(out, "(sensitive)") {
			t.Errorf("%v: exit %d, want the message planned, masked:\n%s", args, code, out)
		}
		if strings.Contains(out, "ACME-SECRET") || strings.Contains(out, "acme-secret") {
			t.Errorf("%v shows the subject:\n%s", args, out)
		}
	}
}
