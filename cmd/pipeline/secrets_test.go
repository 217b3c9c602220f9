package main

import (
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
source "static" "s" {
  records = {
    one    = { v = var.s1 }
    three  = { v = var.s3 }
    twenty = { v = "prefix-${var.s20}" }
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
sink "log" "bad" {
  input = source.static.s
  path  = "/nonexistent/${var.s20}/x.log"
}
`

// Secrets of 1, 3 and 20 characters, with quotes and backslashes.
var secrets = map[string]string{"s1": "Q", "s3": `a"\`, "s20": `Bq"x\y-0123456789abc`}

// spellings are the forms a secret takes in an output: raw, Go-quoted,
// JSON-escaped. A 1-character secret is looked for raw only.
func spellings(s string) []string {
	q := strconv.Quote(s)
	j, _ := json.Marshal(s)
	return []string{s, q[1 : len(q)-1], string(j[1 : len(j)-1])}
}

// TestSecretsNeverShown runs a pipeline whose records, sink paths and
// health details carry sensitive values, and greps every output for them:
// the logs (text and json, at debug level), the log sink (text and json),
// /readyz, /metrics and the diagnostics.
func TestSecretsNeverShown(t *testing.T) {
	if len(secrets["s20"]) != 20 {
		t.Fatalf("the long secret has %d characters", len(secrets["s20"]))
	}
	var vars []string
	for k, v := range secrets {
		vars = append(vars, k+"="+v)
	}
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			outputs := runForSecrets(t, format, vars)
			for name, out := range outputs {
				for k, s := range secrets {
					for _, sp := range spellings(s) {
						if strings.Contains(out, sp) {
							t.Errorf("%s shows secret %s as %q:\n%s", name, k, sp, out)
						}
					}
				}
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
		if strings.Contains(readyz, "/nonexistent/") && strings.Count(string(text), "\n") == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pipeline did not settle: readyz %s", readyz)
		}
		time.Sleep(20 * time.Millisecond)
	}
	metrics := get(t, client, "http://"+addr+"/metrics")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{"logs": stderr.String(), "/readyz": readyz, "/metrics": metrics}
	for _, f := range []string{"text.log", "json.log"} {
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
	src := secretsConfig + "locals {\n  n = var.s20 + 1\n  m = var.s3 * 2\n  o = var.s1 - 1\n}\n"
	if err := os.WriteFile(bad, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	l := load([]string{bad}, vars)
	if !l.diags.HasErrors() {
		t.Fatal("no diagnostic for arithmetic on strings")
	}
	var diags bytes.Buffer
	writeDiagsText(&diags, l.files, l.diags)
	if err := writeJSON(&diags, validateJSON(l.files, l.diags)); err != nil {
		t.Fatal(err)
	}
	outputs["diagnostics"] = diags.String()
	return outputs
}
