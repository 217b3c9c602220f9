package files

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pipeline/pipeline/engine/node"
)

// Editors complete `object.` (format kubernetes), `record.value.` (the
// other formats) and `item.` (in key) with the fields of the data itself:
// a files source has no schema, and what it reads is at hand. So that an
// editor never waits on a large tree, only a sample is read: the first
// files the patterns match, in path order, and only small ones.
const (
	fieldSampleFiles = 16
	fieldSampleBytes = 1 << 20
)

// ObjectFields implements node.FieldLister: the names under path (empty:
// the top level) in the objects (after kind, api_version, selector and
// ignore_fields) or items of a sample of the files, sorted; nil when none
// has an object there. A path step may index a list ("podIPs[0]"): the
// names of every element's object are listed.
func (s *Source) ObjectFields(path []string) []string {
	seen := map[string]bool{}
	for _, f := range s.sample() {
		s.parse(context.Background(), f, func(d document) bool {
			v := d.item
			if s.format == formatKubernetes {
				if d.err != nil || !s.matches(d.obj) {
					return true
				}
				s.pruner.Prune(d.obj)
				v = d.obj
			}
			names(v, path, seen)
			return true
		})
	}
	if len(seen) == 0 {
		return nil
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// names adds to seen the keys of the objects at path below v.
func names(v any, path []string, seen map[string]bool) {
	if len(path) == 0 {
		if m, ok := v.(map[string]any); ok {
			for k := range m {
				seen[k] = true
			}
		}
		return
	}
	step, indexed := strings.CutSuffix(path[0], "]")
	if indexed {
		step, _, _ = strings.Cut(step, "[")
	}
	m, _ := v.(map[string]any)
	below, ok := m[step]
	if !ok {
		return
	}
	if list, isList := below.([]any); indexed && isList {
		for _, e := range list {
			names(e, path[1:], seen)
		}
		return
	}
	names(below, path[1:], seen)
}

// sample reads the first fieldSampleFiles regular files of at most
// fieldSampleBytes that the patterns match, in path order.
func (s *Source) sample() []file {
	var paths []string
	for _, p := range s.patterns {
		m, _ := filepath.Glob(p) // patterns were checked when decoding
		paths = append(paths, m...)
	}
	sort.Strings(paths)
	var out []file
	for i, p := range paths {
		if len(out) == fieldSampleFiles {
			break
		}
		if i > 0 && paths[i-1] == p {
			continue
		}
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() || st.Size() > fieldSampleBytes {
			continue
		}
		if data, err := readRegular(p); err == nil {
			out = append(out, file{path: p, data: data})
		}
	}
	return out
}

var _ node.FieldLister = (*Source)(nil)
