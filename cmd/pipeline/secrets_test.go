package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pipeline/pipeline/cmd/pipeline/view"
)

const secretsConfig = `
variable "s1" {
  type      = string
  sensitive = true
}
variable "s3" {
  type      = string
  sensitive = true
}
variable "s20" {
  type      = string
  sensitive = true
}
variable "jp" {
  type      = string
  sensitive = true
  default   = "{.metadata.namespace}"
}
source "static" "s" {
  records = {
    one    = { v = var.s1, j = join("+", [var.s1, var.s1, var.s1]) }
    three  = { v = var.s3, f = format("<%s>", var.s3) }
    twenty = { v = "prefix-${var.s20}", u = upper(var.s20), s = substr(var.s20, 3, 6) }
  }
}
source "files" "pods" {
  paths = ["manifests/*.yaml"]
}
transform "extract" "derived" {
  input = source.files.pods
  where = "${object.metadata.name}/${var.s3}" != ""
  key   = object.metadata.name
  value = {
    name = object.metadata.name
    u    = upper(var.s20)
    f    = format("[%s|%s]", var.s3, object.metadata.name)
    j    = join("+", [var.s1, var.s1, var.s1])
    s    = substr(var.s20, 3, 6)
    ns   = jsonpath(object, var.jp)
    t    = "${object.metadata.name}/${var.s3}"
  }
}
sink "log" "text" {
  input = source.static.s
  path  = "text.log"
}
sink "log" "json" {
  input  = source.static.s
  path   = "json.log"
  format = "json"
}
sink "log" "derived_text" {
  input = transform.extract.derived
  path  = "derived.log"
}
sink "log" "derived_json" {
  input  = transform.extract.derived
  path   = "derived.json.log"
  format = "json"
}
sink "audit" "trail" {
  input = transform.extract.derived
  path  = "audit.jsonl"
}
sink "audit" "static_trail" {
  input = source.static.s
  path  = "static-audit.jsonl"
}
sink "log" "bad" {
  input = source.static.s
  path  = "/nonexistent/${lower(var.s1)}/x.log"
}
`

const secretsManifest = `apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: shop
`

// Secrets of 1, 3 and 20 characters, with quotes and backslashes.
var secrets = map[string]string{"s1": "Q", "s3": `a"\`, "s20": `Bq"x\y-0123456789abc`}

// derived are values computed from the secrets by string functions: no
// secret's text is in them, so only the sensitive mark can hide them.
func derived() map[string]string {
	s1, s3, s20 := secrets["s1"], secrets["s3"], secrets["s20"]
	return map[string]string{
		"join(s1)":     s1 + "+" + s1 + "+" + s1,
		"format(s3)":   "[" + s3 + "|web-1]",
		"format2(s3)":  "<" + s3 + ">",
		"template(s3)": "web-1/" + s3,
		"claimed(s1)":  "/tmp/x-" + s1 + ".log", // named by a diagnostic
		"upper(s20)":   strings.ToUpper(s20),
		"substr(s20)":  s20[3:9],
		"jsonpath(jp)": `"shop"`,                                    // the manifest's namespace, read by a sensitive JSONPath
		"lower(s1)":    "/nonexistent/" + strings.ToLower(s1) + "/", // in a path
	}
}

// spellings are the forms a secret takes in an output: raw, Go-quoted,
// JSON-escaped.
func spellings(s string) []string {
	q := strconv.Quote(s)
	j, _ := json.Marshal(s)
	return []string{s, q[1 : len(q)-1], string(j[1 : len(j)-1])}
}

// TestSecretsNeverShown runs a pipeline whose records (declared, and
// computed per object at run time), sink paths, audit trail and health
// details carry sensitive values of 1, 3 and 20 characters with quotes and
// backslashes, some derived through upper, format, join and substr, and
// greps every output for them: the logs (text and json, at debug level),
// the log sinks (text and json), the audit files, /readyz, /metrics and the
// diagnostics.
func TestSecretsNeverShown(t *testing.T) {
	if len(secrets["s20"]) != 20 {
		t.Fatalf("the long secret has %d characters", len(secrets["s20"]))
	}
	var vars []string
	for k, v := range secrets {
		vars = append(vars, k+"="+v)
	}
	hidden := derived()
	for k, v := range secrets {
		hidden[k] = v
	}
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			outputs := runForSecrets(t, format, vars)
			for name, out := range outputs {
				for k, s := range hidden {
					for _, sp := range spellings(s) {
						if strings.Contains(out, sp) {
							t.Errorf("%s shows secret %s as %q:\n%s", name, k, sp, out)
						}
					}
				}
			}
			// The records are there, masked: not dropped.
			for _, f := range []string{"text.log", "json.log", "derived.log", "derived.json.log", "audit.jsonl", "static-audit.jsonl"} {
				if n := strings.Count(outputs[f], "(sensitive)"); n < 3 {
					t.Errorf("%s masks %d values, want at least 3:\n%s", f, n, outputs[f])
				}
			}
			if !strings.Contains(outputs["derived.log"], "web-1") {
				t.Errorf("derived.log lost the values that are not sensitive:\n%s", outputs["derived.log"])
			}
		})
	}
}

func runForSecrets(t *testing.T, format string, vars []string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "p.hcl")
	if err := os.WriteFile(cfg, []byte(secretsConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "manifests"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifests", "pod.yaml"), []byte(secretsManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	var stderr bytes.Buffer
	go func() {
		done <- runPipeline(ctx, io.Discard, &stderr, []string{cfg}, runFlags{vars: vars, listen: "127.0.0.1:0", logFormat: format,
			logLevel: "debug", onListen: func(a string) { addrc <- a }})
	}()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("run ended early: %v\n%s", err, stderr.String())
	}
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	var readyz string
	deadline := time.Now().Add(10 * time.Second)
	for {
		readyz = get(t, client, "http://"+addr+"/readyz")
		text, _ := os.ReadFile(filepath.Join(dir, "text.log"))
		ext, _ := os.ReadFile(filepath.Join(dir, "derived.log"))
		trail, _ := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
		if strings.Contains(readyz, "sink.log.bad") && strings.Contains(readyz, "sensitive") &&
			strings.Count(string(text), "\n") == 3 && strings.Count(string(ext), "\n") == 1 && strings.Contains(string(trail), "web-1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pipeline did not settle: readyz %s", readyz)
		}
		time.Sleep(20 * time.Millisecond)
	}
	metrics := get(t, client, "http://"+addr+"/metrics")
	console := consoleOutputs(t, client, "http://"+addr)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{"logs": stderr.String(), "/readyz": readyz, "/metrics": metrics, "console": console}
	for _, f := range []string{"text.log", "json.log", "derived.log", "derived.json.log", "audit.jsonl", "static-audit.jsonl"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		outputs[f] = string(b)
	}
	// A diagnostic about an expression that uses a secret.
	bad := filepath.Join(dir, "bad", "p.hcl")
	if err := os.MkdirAll(filepath.Dir(bad), 0o755); err != nil {
		t.Fatal(err)
	}
	src := secretsConfig + `locals {
  n = var.s20 + 1
  m = var.s3 * 2
  o = var.s1 - 1
  p = tonumber(upper(var.s20))
  q = cidrhost(format("%s/8", var.s3), 1)
  r = tobool(join("", [var.s1]))
  s = file(substr(var.s20, 0, 5))
  t = { for c in [var.s1] : c => c }[lower(var.s3)]
}
sink "log" "dup1" {
  input = source.static.s
  path  = "/tmp/x-${var.s1}.log"
}
sink "log" "dup2" {
  input = source.static.s
  path  = "/tmp/x-${var.s1}.log"
}
`
	if err := os.WriteFile(bad, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	l := load([]string{bad}, vars)
	if !l.diags.HasErrors() {
		t.Fatal("no diagnostic for arithmetic on strings")
	}
	claimed := false
	for _, d := range l.diags {
		claimed = claimed || d.Summary == "Resource written by two nodes"
	}
	if !claimed {
		t.Fatalf("no diagnostic for two sinks on one path: %v", l.diags)
	}
	var diags bytes.Buffer
	view.WriteDiagsText(&diags, l.files, l.diags)
	if err := view.WriteJSON(&diags, view.ValidateJSON(l.files, l.diags)); err != nil {
		t.Fatal(err)
	}
	outputs["diagnostics"] = diags.String()
	return outputs
}

// TestValidateReadsNoCACert: validate checks syntax and references only; a
// ca_cert file that is not there (secrets not mounted in CI) is read, and
// refused, when a client is built.
func TestValidateReadsNoCACert(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "p.hcl")
	if err := os.WriteFile(cfg, []byte(`cluster "remote" {
  endpoint   = "https://10.0.0.1:6443"
  ca_cert    = "/nonexistent/ca.pem"
  token_file = "/nonexistent/token"
}
source "kubernetes" "pods" {
  cluster  = cluster.remote
  resource = "pods"
}
sink "log" "out" {
  input = source.kubernetes.pods
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"validate", cfg}, &out, &errb); code != 0 {
		t.Fatalf("validate with an absent ca_cert file: exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"plan", "--wait", "5s", cfg}, &out, &errb); code != 1 || !strings.Contains(errb.String()+out.String(), "ca_cert") {
		t.Fatalf("plan with an absent ca_cert file: exit %d, want 1 naming ca_cert\n%s%s", code, out.String(), errb.String())
	}
}

// consoleOutputs reads everything the web console serves of its own: the
// graph, every node's details (its block as written) and a live frame
// naming a health detail computed from a secret.
func consoleOutputs(t *testing.T, client *http.Client, base string) string {
	t.Helper()
	graph := get(t, client, base+"/console/graph")
	var g struct{ Nodes []struct{ Address string } }
	if err := json.Unmarshal([]byte(graph), &g); err != nil || len(g.Nodes) == 0 {
		t.Fatalf("console graph %v: %s", err, graph)
	}
	out := []string{graph}
	for _, n := range g.Nodes {
		out = append(out, get(t, client, base+"/console/node?addr="+n.Address))
	}
	resp, err := client.Get(base + "/console/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") {
			out = append(out, sc.Text())
			break
		}
	}
	all := strings.Join(out, "\n")
	if !strings.Contains(all, "sink.log.bad") || !strings.Contains(all, `sink \"log\" \"bad\"`) {
		t.Fatalf("the console does not show the failing sink:\n%s", all)
	}
	return all
}
