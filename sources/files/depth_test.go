package files

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipeline/pipeline/internal/kobject"
)

// A document nested deeper than the decoders can recurse, or holding a
// number of millions of digits, is a bad document (skipped, counted), not
// a fatal stack overflow or minutes of CPU.
func TestDeepAndLongDocuments(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "deep.json"), `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"deep"},"x":`+strings.Repeat("[", 5_000_000)+strings.Repeat("]", 5_000_000)+"}")
	write(t, filepath.Join(dir, "deep.yaml"), "apiVersion: v1\nkind: Pod\nmetadata:\n  name: deepyaml\nx:\n"+strings.Repeat("- ", 200_000)+"1\n")
	write(t, filepath.Join(dir, "long.json"), `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"long"},"x":`+strings.Repeat("9", 5_000_000)+"}")
	write(t, filepath.Join(dir, "ok.yaml"), pod("ok", "web"))
	s := mustBuild(t, dir, `paths = ["*"]`)
	records, _, skips := s.records(s.read().files)
	if len(records) != 1 || !strings.HasSuffix(records[0].Key, "/ok") {
		t.Errorf("%d records, want the one good object", len(records))
	}
	bad := 0
	for _, sk := range skips {
		if sk.reason == kobject.ReasonBadDocument {
			bad++
		}
	}
	if bad != 3 {
		t.Errorf("%d bad documents, want 3", bad)
	}
}
