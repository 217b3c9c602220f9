package schema

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
)

// loadSrc loads one in-memory file and returns the summaries of its
// diagnostics.
func loadSrc(t *testing.T, src string) string {
	t.Helper()
	_, diags := NewLoader().ParseSource("hostile.hcl", []byte(src), Options{Environ: []string{}})
	var out []string
	for _, d := range diags {
		out = append(out, d.Summary)
	}
	return strings.Join(out, "; ")
}

// Hostile configurations a probe found: each ends in a diagnostic, not a
// stack overflow, minutes of CPU or a value that poisons later stages.
func TestHostileConfigurations(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		// 5: [*] splats nest like .* and are counted the same.
		{"splat chain", "locals {\n  x = [1]\n  y = local.x" + strings.Repeat("[*]", 20_000) + "\n}", "Expression too long"},
		{"attribute splat chain", "locals {\n  x = [1]\n  y = local.x" + strings.Repeat(".*", 20_000) + "\n}", "Expression too long"},
		// 7: numbers too large to print or compare cheaply.
		{"huge exponent", "locals {\n  x = 1e9999999\n}", "Invalid number"},
		{"tiny exponent", "locals {\n  x = 1e-9999999\n}", "Invalid number"},
		{"long literal", "locals {\n  x = " + strings.Repeat("9", 5_000_000) + "\n}", "Invalid number"},
		{"tonumber huge", "locals {\n  x = tonumber(\"1e9999999\")\n}", "Error in function call"},
		{"tonumber long", "locals {\n  x = tonumber(\"" + strings.Repeat("9", 1_000_000) + "\")\n}", "Invalid function argument"},
		{"jsondecode huge", "locals {\n  x = jsondecode(\"1e9999999\")\n}", "Error in function call"},
		{"jsondecode long", "locals {\n  x = jsondecode(\"" + strings.Repeat("9", 1_000_000) + "\")\n}", "Invalid function argument"},
		// 4: non-finite numbers are refused where they are made.
		{"division by zero in a local", "locals {\n  x = 1/0\n}", "Invalid number"},
		{"division by zero inside a local", "locals {\n  x = { a = [1, -1/0] }\n}", "Invalid number"},
		// 6: data nested too deeply for the decoders.
		{"jsondecode deep", "locals {\n  x = jsondecode(\"" + strings.Repeat("[", 1_000_000) + strings.Repeat("]", 1_000_000) + "\")\n}", "Invalid function argument"},
		// 9: nested template directives count as nesting.
		{"nested ifs", "locals {\n  x = <<EOT\n" + strings.Repeat("%{if true}", 100_000) + strings.Repeat("%{endif}", 100_000) + "\nEOT\n}", "Configuration nested too deeply"},
		// Fine: numbers a configuration uses.
		{"ordinary numbers", "locals {\n  x = [0, 1.5, -3, 18446744073709551615, 1e300, 1e-300, jsondecode(\"[1e10]\"), tonumber(\"42\")]\n}", ""},
		{"ordinary json", "locals {\n  x = jsondecode(\"" + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "\")\n}", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := loadSrc(t, tt.src); !strings.HasPrefix(got, tt.want) || (tt.want == "" && got != "") {
				t.Errorf("diagnostics %q, want %q", got, tt.want)
			}
		})
	}
}

// 9: a configuration's files, bytes and blocks together are bounded.
func TestConfigurationBudget(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range MaxConfigBlocks + 1 {
		fmt.Fprintf(&b, "locals {\n  l%d = %d\n}\n", i, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "many.hcl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, diags := NewLoader().Load([]string{dir}, Options{Environ: []string{}})
	if !diags.HasErrors() || diags[0].Summary != "Too many blocks" {
		t.Errorf("%d blocks: %v", MaxConfigBlocks+1, diags)
	}

	// Past the budget in blocks, the files after it are not parsed: the
	// syntax error of the last one is never seen.
	dir = t.TempDir()
	b.Reset()
	for i := range MaxConfigBlocks/2 + 1 {
		fmt.Fprintf(&b, "variable \"v%d\" {}\n", i)
	}
	for i, src := range []string{b.String(), strings.ReplaceAll(b.String(), `"v`, `"w`), "locals {\n"} {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.hcl", i)), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, diags = NewLoader().Load([]string{dir}, Options{Environ: []string{}})
	if len(diags) != 1 || diags[0].Summary != "Too many blocks" || diags[0].Subject.Filename != filepath.Join(dir, "f1.hcl") {
		t.Errorf("%d blocks in two files and a third that does not parse: %v", MaxConfigBlocks+2, diags)
	}

	dir = t.TempDir()
	for i := range MaxConfigFiles + 1 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d.hcl", i)), []byte(fmt.Sprintf("locals {\n  l%d = 1\n}\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, diags = NewLoader().Load([]string{dir}, Options{Environ: []string{}})
	if !diags.HasErrors() || diags[0].Summary != "Too many configuration files" {
		t.Errorf("%d files: %v", MaxConfigFiles+1, diags)
	}

	dir = t.TempDir()
	big := "locals {\n  x = \"" + strings.Repeat("a", MaxConfigBytes-100) + "\"\n}\n"
	for i := range MaxConfigTotalBytes/MaxConfigBytes + 1 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.hcl", i)), []byte(strings.Replace(big, "x =", fmt.Sprintf("x%d =", i), 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, diags = NewLoader().Load([]string{dir}, Options{Environ: []string{}})
	if !diags.HasErrors() || diags[0].Summary != "Configuration too large" {
		t.Errorf("%d MiB: %v", MaxConfigTotalBytes>>20+16, diags)
	}
}

// 9: loading is linear in the locals: each local's expression sees the
// locals it names, not an object of all of them rebuilt for each.
func BenchmarkLocals10000(b *testing.B) {
	var sb strings.Builder
	for i := range 10_000 {
		fmt.Fprintf(&sb, "locals {\n  l%d = %d\n}\n", i, i)
	}
	src := []byte(sb.String())
	for b.Loop() {
		if _, diags := NewLoader().ParseSource("many.hcl", src, Options{Environ: []string{}}); diags.HasErrors() {
			b.Fatal(diags.Error())
		}
	}
}

// A configuration file over MaxConfigBytes is refused from its size, with
// the file and its size named; one that is a FIFO fails at once instead
// of blocking the load.
func TestConfigFileBounds(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.hcl")
	if err := os.WriteFile(big, make([]byte, MaxConfigBytes+7), 0o644); err != nil {
		t.Fatal(err)
	}
	_, diags := NewLoader().Load([]string{big}, Options{Environ: []string{}})
	if len(diags) != 1 || diags[0].Summary != "Configuration file too large" || !strings.Contains(diags[0].Detail, fmt.Sprintf("holds %d bytes", MaxConfigBytes+7)) {
		t.Errorf("a file of %d bytes: %v", MaxConfigBytes+7, diags)
	}
	fifo := filepath.Join(t.TempDir(), "fifo.hcl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan hcl.Diagnostics, 1)
	go func() { _, diags := NewLoader().Load([]string{fifo}, Options{Environ: []string{}}); done <- diags }()
	select {
	case diags := <-done:
		if !diags.HasErrors() || !strings.Contains(diags.Error(), "is not a regular file (a FIFO)") {
			t.Errorf("a FIFO: %v", diags)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("loading a FIFO blocked")
	}
}
