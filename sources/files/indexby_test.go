package files

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestIndexByMapOrder: an index_by path that walks a map gives an object
// one key on every read, its values in the sorted order of their keys (the
// walk once followed Go's random map order).
func TestIndexByMapOrder(t *testing.T) {
	dir := t.TempDir()
	var labels, want []string
	for i := range 20 {
		labels = append(labels, fmt.Sprintf("k%02d: v%d", i, i))
		want = append(want, fmt.Sprint("v", i))
	}
	write(t, filepath.Join(dir, "p.yaml"), "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  labels: {"+strings.Join(labels, ", ")+"}\n")
	s := mustBuild(t, dir, "paths = [\"p.yaml\"]\nindex_by = [\"{.metadata.labels.*}\"]")
	for range 50 {
		records, _, _ := s.records(s.read().files)
		var keys []string
		for _, r := range records {
			keys = append(keys, r.Key)
		}
		if len(keys) != 1 || keys[0] != strings.Join(want, ",") {
			t.Fatalf("keys %q, want one: %s", keys, strings.Join(want, ","))
		}
	}
}
