package schema

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// samePieces fails t when src parsed in pieces of size bytes differs in
// anything from hclsyntax's parse of the whole: the file, its body to the
// last range, and the diagnostics (pieces are only taken when the whole
// has none). It reports whether the pieces were taken.
func samePieces(t *testing.T, name string, src []byte, size int) bool {
	t.Helper()
	diags, cuts := checkNesting(src, name, MaxNesting, lexChunk)
	if diags.HasErrors() {
		return false
	}
	want, wantDiags := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
	got, ok := parseInPieces(src, name, cuts, size)
	if !ok {
		return false
	}
	if len(wantDiags) > 0 {
		t.Fatalf("%s: parsed in pieces without a diagnostic, but whole with %s", name, wantDiags.Error())
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: parsed in pieces of %d bytes, the file differs (-whole +pieces):\n%s", name, size,
			cmp.Diff(want, got, cmp.Exporter(func(reflect.Type) bool { return true })))
	}
	return true
}

// repoConfigs reads every configuration file of the repository.
func repoConfigs(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, glob := range []string{"../examples/*/*.hcl", "../examples/*/*/*.hcl", "../cmd/pipeline/testdata/*/*.hcl", "../cmd/pipeline/testdata/*/*/*.hcl"} {
		m, _ := filepath.Glob(glob)
		for _, name := range m {
			src, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			out[name] = src
		}
	}
	if len(out) < 20 {
		t.Fatalf("only %d configuration files found", len(out))
	}
	return out
}

// TestParseInPieces: every configuration of the repository, and all of
// them in one file, parse in pieces (of one item, and of a few) into
// exactly what one parse of the whole makes.
func TestParseInPieces(t *testing.T) {
	files := repoConfigs(t)
	var all bytes.Buffer
	taken := 0
	for name, src := range files {
		for _, size := range []int{1, 200} {
			if samePieces(t, name, src, size) && size == 1 {
				taken++
			}
		}
		joined := append(bytes.Clone(all.Bytes()), src...)
		_, d := hclsyntax.ParseConfig(joined, name, hcl.InitialPos)
		if nd, _ := checkNesting(src, name, MaxNesting, lexChunk); len(d) == 0 && !nd.HasErrors() && bytes.HasSuffix(src, []byte("\n")) {
			all.Write(src) // a file within the limits that parses after the others
		}
	}
	if taken < len(files)/2 {
		t.Errorf("only %d of %d files were parsed in pieces", taken, len(files))
	}
	for _, size := range []int{1, 1 << 10, pieceBytes} {
		if !samePieces(t, "all.hcl", all.Bytes(), size) {
			t.Errorf("the repository's configurations in one file (%d bytes) were not parsed in pieces of %d bytes", all.Len(), size)
		}
	}
}

// TestParseInPiecesMutated: the repository's configurations with random
// edits (brackets, quotes, newlines, comments, templates and heredocs
// typed, bytes deleted, lines repeated) still parse in pieces into what
// the whole parse makes, or are left to it.
func TestParseInPiecesMutated(t *testing.T) {
	files := repoConfigs(t)
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	edits := []string{"{", "}", "[", "]", "(", ")", `"`, "\n", "# c\n", "/* c */", "=", "${", "%{", "<<EOT\n", "\nEOT\n", "a = 1\n", "\\", ",", "x"}
	rng := rand.New(rand.NewPCG(1, 2))
	taken := 0
	for i := range 3000 {
		name := names[rng.IntN(len(names))]
		src := bytes.Clone(files[name])
		if len(src) == 0 {
			continue
		}
		for range 1 + rng.IntN(3) {
			at := rng.IntN(len(src))
			switch rng.IntN(3) {
			case 0:
				src = append(src[:at:at], append([]byte(edits[rng.IntN(len(edits))]), src[at:]...)...)
			case 1:
				src = append(src[:at:at], src[at+1:]...)
			default: // repeat the line at
				s := bytes.LastIndexByte(src[:at], '\n') + 1
				e := at + bytes.IndexByte(src[at:], '\n') + 1
				if e > at {
					src = append(src[:e:e], append(bytes.Clone(src[s:e]), src[e:]...)...)
				}
			}
		}
		if samePieces(t, fmt.Sprintf("%s (edit %d)", name, i), src, 1) {
			taken++
		}
	}
	if taken < 300 {
		t.Errorf("only %d of 3,000 edited files were parsed in pieces", taken)
	}
}
